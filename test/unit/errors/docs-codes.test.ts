/**
 * Every error code the documentation names (README.md and docs/*.md, written in backticks with an
 * area prefix) is a code of the table in src/errors/codes.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../../src/errors/codes.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const CODE = /`((?:AGT|CHN|CON|MAP|FML|RUN|SVC|API|EVT)_[A-Z0-9_]+)`/g;

function markdownFiles(): string[] {
  const docs = fs
    .readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => path.join('docs', f));
  return ['README.md', ...docs];
}

describe('error codes named in the docs', () => {
  const files = markdownFiles();

  it('reads README.md and docs/', () => {
    expect(files).toContain('README.md');
    expect(files).toContain(path.join('docs', 'errors.md'));
    const named = files.flatMap((f) => [...fs.readFileSync(path.join(ROOT, f), 'utf8').matchAll(CODE)]);
    expect(named.length).toBeGreaterThan(Object.keys(ERROR_CODES).length);
  });

  it.each(files)('%s names only codes of src/errors/codes.ts', (file) => {
    const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
    const unknown = new Set<string>();
    for (const m of text.matchAll(CODE)) if (!Object.hasOwn(ERROR_CODES, m[1] as string)) unknown.add(m[1] as string);
    expect([...unknown], `${file} names codes that do not exist`).toEqual([]);
  });
});
