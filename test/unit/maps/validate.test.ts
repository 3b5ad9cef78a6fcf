import { describe, expect, it } from 'vitest';
import { action, type ConnectionMetadata, type Field } from '../../../src/connectors/sdk.js';
import { validateMap } from '../../../src/maps/compiler/validate.js';
import { compilePlan } from '../../../src/maps/compiler/plan.js';

const field = (fullName: string, extra: Partial<Field> = {}): Field => ({
  name: fullName,
  fullName,
  originalName: fullName,
  description: '',
  isPrimaryKey: false,
  nullable: true,
  size: 0,
  ordinal: 1,
  propertyType: 'string',
  nativeType: 'TEXT',
  hasDefault: false,
  requiredInActionInput: false,
  usedInLookupCondition: true,
  usedInActionInput: true,
  usedInQueryConstraint: true,
  usedInQuerySelect: true,
  ...extra,
});
const entity = (fullName: string, fields: Field[]) => ({
  id: fullName,
  name: fullName,
  fullName,
  originalName: fullName,
  description: '',
  isHidden: false,
  relationships: [],
  fields,
  actions: [
    action('Query'),
    action('Create'),
    action('Update'),
    action('Delete'),
    action('Upsert'),
    action('UpdateInsert'),
  ],
});
const MD: Record<string, ConnectionMetadata> = {
  c: {
    actions: [],
    entities: [
      entity('people', [
        field('id', { isPrimaryKey: true, propertyType: 'integer' }),
        field('name'),
        field('at', { propertyType: 'datetime' }),
      ]),
      entity('out', [field('id', { isPrimaryKey: true, requiredInActionInput: true }), field('name')]),
    ],
  },
};
let n = 0;
const id = (): string => `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}`;
const query = { blockId: id(), name: 'Q', blockType: 'Query', action: 'Query', connectionId: 'c', entity: 'people' };
const create = (name: string, formula: string, extra: object = {}) => ({
  blockId: id(),
  name,
  blockType: 'Create',
  action: 'Create',
  connectionId: 'c',
  entity: 'out',
  fieldMappings: [
    { targetField: 'id', targetFormula: 'Q.id' },
    { targetField: 'name', targetFormula: formula },
  ],
  ...extra,
});
const map = (...blocks: object[]) => ({ version: '3.0', name: 'M', blocks: [query, ...blocks] });

describe('validateMap', () => {
  it('accepts a valid Map', () => {
    expect(validateMap(map(create('C', 'UPPER(Q.name)')), MD)).toEqual({ valid: true, results: [] });
  });

  it('reports formula errors per Block with the position', () => {
    const v = validateMap(map(create('C', 'UPPER(Q.nope)')), MD);
    expect(v.valid).toBe(false);
    expect(v.results[0]).toMatchObject({
      blockName: 'C',
      code: 'FML_UNKNOWN_FIELD',
      formula: 'fieldMappings.name.targetFormula',
      position: { line: 1, column: 7 },
    });
  });

  it('accepts every Block kind of the model', () => {
    const v = validateMap(
      map({
        blockId: id(),
        name: 'L',
        blockType: 'Loop',
        action: 'None',
        condition: 'L.index < 2',
        body: [{ blockId: id(), name: 'X', blockType: 'LoopExit', action: 'None' }],
      }),
      MD,
    );
    expect(v).toEqual({ valid: true, results: [] });
  });

  it('checks the rules of the control Blocks', () => {
    const v = validateMap(
      map(
        { blockId: id(), name: 'L', blockType: 'Loop', action: 'None', body: [] },
        { blockId: id(), name: 'C', blockType: 'Continue', action: 'None' },
        { blockId: id(), name: 'E', blockType: 'ForEachChild', action: 'None', relationship: 'nope', body: [] },
        { blockId: id(), name: 'S', blockType: 'SendReply', action: 'None', source: 'L' },
      ),
      MD,
    );
    expect(v.results.map((r) => [r.blockName, r.code])).toEqual([
      ['L', 'MAP_MODEL_INVALID'],
      ['C', 'MAP_BLOCK_MISPLACED'],
      ['E', 'MAP_RELATIONSHIP_NOT_FOUND'],
      ['S', 'MAP_BLOCK_MISPLACED'],
      ['S', 'MAP_BLOCK_MISPLACED'],
    ]);
  });

  it('checks the starters: Fetch needs a filter, Native Query a Connector with one, messages their fields', () => {
    const fetch = {
      blockId: id(),
      name: 'F',
      blockType: 'Fetch',
      action: 'Query',
      connectionId: 'c',
      entity: 'people',
    };
    expect(validateMap({ version: '3.0', name: 'M', blocks: [fetch] }, MD).results.map((r) => r.code)).toEqual([
      'MAP_MODEL_INVALID',
    ]);
    const nq = {
      blockId: id(),
      name: 'N',
      blockType: 'NativeQuery',
      action: 'NativeQuery',
      connectionId: 'c',
      statement: 'SELECT 1 AS one',
      fields: ['one'],
    };
    expect(validateMap({ version: '3.0', name: 'M', blocks: [nq] }, MD).results.map((r) => r.code)).toEqual([
      'MAP_ACTION_UNSUPPORTED',
    ]);
    const withNq: Record<string, ConnectionMetadata> = {
      c: { ...(MD['c'] as ConnectionMetadata), actions: [action('NativeQuery')] },
    };
    expect(validateMap({ version: '3.0', name: 'M', blocks: [nq] }, withNq).valid).toBe(true);
    const msg = { blockId: id(), name: 'W', blockType: 'WaitForMessage', action: 'None', fields: ['a'] };
    const read = (f: string) => ({
      blockId: id(),
      name: `C${n}`,
      blockType: 'Create',
      action: 'Create',
      connectionId: 'c',
      entity: 'out',
      fieldMappings: [{ targetField: 'id', targetFormula: f }],
    });
    expect(validateMap({ version: '3.0', name: 'M', blocks: [msg, read('W.a')] }, MD).valid).toBe(true);
    expect(
      validateMap({ version: '3.0', name: 'M', blocks: [msg, read('W.b')] }, MD).results.map((r) => r.code),
    ).toEqual(['FML_UNKNOWN_FIELD']);
  });

  it('refuses reading the output of a batched write, allows it when the write is not bulk', () => {
    const bulk = validateMap(map(create('C1', 'Q.name'), create('C2', 'C1.name')), MD);
    expect(bulk.results.map((r) => r.code)).toContain('MAP_BATCHED_OUTPUT_READ');
    const single = validateMap(map(create('C1', 'Q.name', { useBulk: false }), create('C2', 'C1.name')), MD);
    expect(single.valid).toBe(true);
  });

  it('checks Connections, entities, fields, net change and required fields', () => {
    const v = validateMap(
      map(
        { blockId: id(), name: 'X', blockType: 'Create', action: 'Create', connectionId: 'nope', entity: 'out' },
        { blockId: id(), name: 'Y', blockType: 'Create', action: 'Create', connectionId: 'c', entity: 'ghost' },
        {
          blockId: id(),
          name: 'Z',
          blockType: 'Create',
          action: 'Create',
          connectionId: 'c',
          entity: 'out',
          fieldMappings: [{ targetField: 'bogus', targetFormula: '1' }],
        },
      ),
      MD,
    );
    expect(v.results.map((r) => [r.blockName, r.code, r.severity])).toEqual([
      ['X', 'MAP_CONNECTION_NOT_FOUND', 'error'],
      ['Y', 'MAP_ENTITY_NOT_FOUND', 'error'],
      ['Z', 'MAP_FIELD_NOT_FOUND', 'error'],
      ['Z', 'MAP_REQUIRED_FIELD_MISSING', 'warning'],
    ]);
    const nc = validateMap({ ...map(), blocks: [{ ...query, netChange: { fieldName: 'name' } }] }, MD);
    expect(nc.results.map((r) => r.code)).toEqual(['MAP_NET_CHANGE_FIELD']);
  });

  it('suggests the nearest entity and field name for a near miss, and nothing for a far one', () => {
    const v = validateMap(
      map(
        {
          blockId: id(),
          name: 'Y',
          blockType: 'Create',
          action: 'Create',
          connectionId: 'c',
          entity: 'ouut',
          fieldMappings: [],
        },
        {
          blockId: id(),
          name: 'Z',
          blockType: 'Create',
          action: 'Create',
          connectionId: 'c',
          entity: 'out',
          fieldMappings: [
            { targetField: 'id', targetFormula: '1' },
            { targetField: 'nmae', targetFormula: '1' },
            { targetField: 'zzzzzz', targetFormula: '1' },
          ],
        },
        create('C', 'UPPER(Q.nam)'),
      ),
      MD,
    );
    const messages = v.results.map((r) => r.message);
    expect(messages).toContain('Y: the Connection c has no entity ouut (did you mean out?).');
    expect(messages).toContain('Z: out has no field nmae (did you mean name?).');
    expect(messages).toContain('Z: out has no field zzzzzz.');
    expect(messages.find((m) => m.startsWith('C:'))).toContain('Unknown field Q.nam; did you mean Q.name?');
  });

  it('enforces the limits: 250 Blocks, names of 50 characters, unique names', () => {
    const many = Array.from({ length: 250 }, (_, i) => ({
      blockId: id(),
      name: `E${i}`,
      blockType: 'MapExit',
      action: 'None',
    }));
    expect(validateMap(map(...many), MD).results[0]).toMatchObject({ code: 'MAP_MODEL_INVALID' });
    expect(validateMap(map(create('x'.repeat(51), '1')), MD).valid).toBe(false);
    expect(validateMap(map(create('Q', '1')), MD).results[0]?.message).toContain('unique');
  });

  it('compilePlan refuses an invalid Map with MAP_INVALID carrying the results', () => {
    expect(() => compilePlan(map(create('C', 'Q.nope')), MD)).toThrow(expect.objectContaining({ code: 'MAP_INVALID' }));
  });
});
