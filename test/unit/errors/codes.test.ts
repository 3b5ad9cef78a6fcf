import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, type ErrorCode } from '../../../src/errors/codes.js';
import { FerryError, toErrorData } from '../../../src/errors/ferry-error.js';

const PREFIXES = ['AGT_', 'CHN_', 'CON_', 'MAP_', 'FML_', 'RUN_', 'SVC_', 'API_', 'EVT_'];

describe('the error code table', () => {
  const codes = Object.keys(ERROR_CODES) as ErrorCode[];
  const doc = fs.readFileSync(new URL('../../../docs/errors.md', import.meta.url), 'utf8');
  const documented = new Map(
    [...doc.matchAll(/^\| `([A-Z_]+)` \| (\d{3}) \| (\w+) \|/gm)].map((m) => [
      m[1],
      { status: Number(m[2]), kind: m[3] },
    ]),
  );

  it('prefixes every code with its area', () => {
    for (const code of codes)
      expect(
        PREFIXES.some((p) => code.startsWith(p)),
        code,
      ).toBe(true);
  });

  it('gives every code a kind, an HTTP status and a title', () => {
    for (const code of codes) {
      const spec = ERROR_CODES[code];
      expect(['config', 'transient', 'system']).toContain(spec.kind);
      expect(spec.status).toBeGreaterThanOrEqual(400);
      expect(spec.status).toBeLessThan(600);
      expect(spec.title.length).toBeGreaterThan(0);
    }
  });

  it('documents each code in docs/errors.md with the same status and kind, and nothing else', () => {
    for (const code of codes) {
      expect(documented.get(code), `${code} missing from docs/errors.md`).toEqual({
        status: ERROR_CODES[code].status,
        kind: ERROR_CODES[code].kind,
      });
    }
    expect([...documented.keys()].sort()).toEqual([...codes].sort());
  });

  it('travels as plain data', () => {
    const err = new FerryError('API_CONFLICT', 'busy', { details: { id: 1 } });
    expect(toErrorData(err)).toEqual({ code: 'API_CONFLICT', kind: 'config', message: 'busy', details: { id: 1 } });
    expect(err.status).toBe(409);
  });
});
