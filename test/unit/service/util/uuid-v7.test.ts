import { describe, expect, it } from 'vitest';
import { uuidV7 } from '../../../../service/util/uuid-v7.js';

describe('uuidV7', () => {
  it('makes version-7 GUIDs that sort in the order they were made, also within one millisecond', () => {
    const now = Date.now();
    const ids = [...Array.from({ length: 10_000 }, () => uuidV7(now)), uuidV7(now + 5_000)];
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    expect(parseInt(ids.at(-1)?.replace('-', '').slice(0, 12) ?? '', 16)).toBe(now + 5_000);
  });
});
