import { describe, expect, it } from 'vitest';
import { BLOCK_TYPES, MESSAGE_STARTERS, STARTER_TYPES } from '../../../../src/protocol/map.js';
import { BLOCK_KINDS } from '../../../../src/maps/blocks/index.js';

describe('the Block registry', () => {
  it('holds one kind per blockType of the model, under its own type', () => {
    expect(Object.keys(BLOCK_KINDS).sort()).toEqual([...BLOCK_TYPES].sort());
    for (const t of BLOCK_TYPES) expect(BLOCK_KINDS[t].type).toBe(t);
  });

  it('binds the starters of the model to a source and every other kind to a step', () => {
    for (const t of BLOCK_TYPES) {
      const k = BLOCK_KINDS[t];
      expect([t, !!k.source, !!k.bind]).toEqual([t, STARTER_TYPES.includes(t), !STARTER_TYPES.includes(t)]);
    }
  });

  it('names the entity Action of every kind that reads or writes an entity', () => {
    for (const t of BLOCK_TYPES) {
      const k = BLOCK_KINDS[t];
      if (k.connection === 'entity') expect(k.entityAction, t).toBeTruthy();
      else expect(k.entityAction, t).toBeUndefined();
      expect(k.connection === 'entity-if-named', t).toBe(MESSAGE_STARTERS.includes(t));
    }
  });
});
