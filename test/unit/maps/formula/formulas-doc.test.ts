import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { FORMULA_FUNCTIONS } from '../../../../src/maps/formula/catalogue.js';

describe('docs/formulas.md', () => {
  const doc = fs.readFileSync(new URL('../../../../docs/formulas.md', import.meta.url), 'utf8');

  it('documents every catalogue function with its signature and category', () => {
    for (const f of FORMULA_FUNCTIONS) {
      const row = doc.split('\n').find((line) => line.startsWith(`| \`${f.signature}\` |`));
      expect(row, `${f.name} has no table row`).toBeDefined();
      expect(row, f.name).toContain(`| ${f.category} |`);
    }
  });

  it('documents no function the catalogue lacks', () => {
    const documented = [...doc.matchAll(/^\| `([A-Z][A-Z0-9_]*)\(/gm)].map((m) => m[1]);
    expect(documented.sort()).toEqual(FORMULA_FUNCTIONS.map((f) => f.name).sort());
  });
});
