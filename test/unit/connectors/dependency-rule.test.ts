import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../../..');

function tsFiles(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((e) =>
      e.isDirectory() ? tsFiles(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : [],
    );
}

describe('the dependency rule for connector plugins', () => {
  it('lets plugins import from Ferry only the SDK (src/connectors/sdk.ts)', () => {
    const offenders: string[] = [];
    for (const file of tsFiles(path.join(ROOT, 'connectors'))) {
      const text = fs.readFileSync(file, 'utf8');
      for (const m of text.matchAll(/from\s+'([^']+)'/g)) {
        const spec = m[1] as string;
        if (!spec.startsWith('.')) continue;
        const target = path.resolve(path.dirname(file), spec);
        const inside =
          target.startsWith(path.dirname(file)) ||
          target.startsWith(
            path.join(
              ROOT,
              'connectors',
              path.relative(path.join(ROOT, 'connectors'), file).split(path.sep)[0] as string,
            ),
          );
        if (!inside && target !== path.join(ROOT, 'src/connectors/sdk.js'))
          offenders.push(`${path.relative(ROOT, file)} → ${spec}`);
      }
    }
    expect(offenders).toEqual([]);
  });
});
