/**
 * The library runs inside the sandbox as source text: its files import nothing at run time, and
 * each installer's text is self-contained.
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { INSTALLERS, librarySource, LIBRARY_GLOBAL } from '../../../../src/maps/formula/library/index.js';

const DIR = new URL('../../../../src/maps/formula/library/', import.meta.url);

describe('the library source', () => {
  const files = fs.readdirSync(DIR).filter((f) => f.endsWith('.ts') && f !== 'index.ts');

  it.each(files)('%s imports nothing but types', (file) => {
    const source = fs.readFileSync(new URL(file, DIR), 'utf8');
    const imports = source.split('\n').filter((line) => /^\s*import\s/.test(line));
    for (const line of imports) expect(line, file).toMatch(/^import type /);
    expect(source).not.toMatch(/\brequire\(|\bimport\(/);
  });

  it('exports one installer per file, each a function of L alone', () => {
    expect(INSTALLERS).toHaveLength(files.length - 1); // types.ts has no installer
    for (const install of INSTALLERS) expect(install.length).toBe(1);
  });

  it('binds the library to one global name', () => {
    const source = librarySource();
    expect(source).toContain(`const ${LIBRARY_GLOBAL} = `);
    expect(source).not.toMatch(/\bimport\b|\brequire\(/);
  });
});
