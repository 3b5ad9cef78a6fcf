import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { upgradeMap } from '../../../src/maps/compiler/upgrade.js';
import { MapModel } from '../../../src/protocol/map.js';

const EXPORT = JSON.parse(
  fs.readFileSync(new URL('../../fixtures/maps-2.5/accounts-export.json', import.meta.url), 'utf8'),
) as unknown;

describe('upgradeMap (2.5 export → 3.0)', () => {
  it('rebuilds the Block tree from the linked list, with If/Else containers as then/else', () => {
    const m = upgradeMap(EXPORT);
    expect(m.version).toBe('3.0');
    expect(m.name).toBe('Accounts to CRM');
    expect(m.blocks.map((b) => [b.name, b.blockType])).toEqual([
      ['Query_Account', 'Query'],
      ['HasEmail', 'IfElse'],
      ['Lookup_Owner', 'Lookup'],
      ['Update_Account', 'Update'],
    ]);
    const [q, ifElse, lookup, update] = m.blocks;
    expect(q?.filter).toEqual({ op: '=', field: 'state', value: 'active' });
    expect(q?.netChange).toEqual({ fieldName: 'modified_on' });
    expect(ifElse?.condition).toBe('(Query_Account.email <> "") AND (Query_Account.id > 0)');
    expect(ifElse?.then?.[0]).toMatchObject({
      name: 'Upsert_Contact',
      blockType: 'Upsert',
      action: 'InsertUpdate',
      useBulk: true,
      bulkCountPerOperation: 500,
      onErrorMessage: 'contact refused',
    });
    expect(ifElse?.then?.[0]?.fieldMappings).toEqual([
      { targetField: 'email', targetDataType: 'String', targetFormula: 'LOWER(Query_Account.email)' },
    ]);
    expect(ifElse?.else?.[0]).toMatchObject({ name: 'Skip', blockType: 'MapExit' });
    expect(lookup?.lookupConditions).toEqual([
      { fieldName: 'id', comparisonOperator: '=', compareValue: 'Query_Account.owner_id' },
    ]);
    expect(update).toMatchObject({ blockType: 'Update', useBulk: false });
  });

  it('is pure and its output is a valid 3.0 model that upgrades to itself', () => {
    const before = JSON.stringify(EXPORT);
    const m = upgradeMap(EXPORT);
    expect(JSON.stringify(EXPORT)).toBe(before);
    expect(MapModel.safeParse(m).success).toBe(true);
    expect(upgradeMap(m)).toEqual(m);
  });

  it('converts Fetch, Native Query, Loop, For Each Child, Loop Exit, Continue and CreateWith of a 2.5 export', () => {
    const g = (k: number): string => `00000000-0000-4000-8000-${String(k).padStart(12, '0')}`;
    const m = upgradeMap({
      Name: 'Old kinds',
      StartingBlockId: g(1),
      Blocks: [
        {
          Id: g(1),
          BlockType: 'Fetch',
          Name: 'F',
          ConnectionId: 'c',
          Entity: 'orders',
          MaxRecords: 5,
          NextBlockId: g(2),
          FilterItems: [{ FieldName: 'id', ComparisonOperator: '>', CompareValue: '10' }],
          Relationships: [{ FullName: 'lines_rel' }],
        },
        {
          Id: g(2),
          BlockType: 'Loop',
          Name: 'L',
          PrevBlockId: g(1),
          NextBlockId: g(5),
          FirstChildBlockId: g(3),
          MaxIterations: 7,
          ExpressionItems: [{ LeftValue: 'L.index', ComparisonOperator: '<', RightValue: '3' }],
        },
        { Id: g(3), BlockType: 'Continue', Name: 'Next', ParentBlockId: g(2), NextBlockId: g(4) },
        { Id: g(4), BlockType: 'Exit Loop', Name: 'Brk', ParentBlockId: g(2), PrevBlockId: g(3) },
        {
          Id: g(5),
          BlockType: 'For Each Child',
          Name: 'Each',
          PrevBlockId: g(2),
          NextBlockId: g(7),
          FirstChildBlockId: g(6),
          Relationship: { FullName: 'lines_rel' },
        },
        {
          Id: g(6),
          BlockType: 'Operation',
          ActionName: 'CreateWith',
          Name: 'CW',
          ParentBlockId: g(5),
          ConnectionId: 'c',
          Entity: 'orders',
          Children: [
            {
              Relationship: 'r',
              Source: 'F.lines_rel',
              Name: 'Line',
              FieldMappings: [{ TargetField: 'sku', TargetFormula: 'Line.sku' }],
            },
          ],
        },
        {
          Id: g(7),
          BlockType: 'NativeQueryBlock',
          Name: 'NQ',
          PrevBlockId: g(5),
          ConnectionId: 'c',
          NativeQuery: 'SELECT 1',
        },
      ],
    });
    const [f, loop, each, nq] = m.blocks;
    expect(f).toMatchObject({
      blockType: 'Fetch',
      maxRecords: 5,
      filter: { op: '>', field: 'id', value: 10 },
      relationships: ['lines_rel'],
    });
    expect(loop).toMatchObject({ blockType: 'Loop', maxIterations: 7, condition: '(L.index < 3)' });
    expect(loop?.body?.map((b) => b.blockType)).toEqual(['Continue', 'LoopExit']);
    expect(each).toMatchObject({ blockType: 'ForEachChild', relationship: 'lines_rel' });
    expect(each?.body?.[0]).toMatchObject({
      blockType: 'CreateWith',
      action: 'CreateWith',
      children: [
        {
          relationship: 'r',
          source: 'F.lines_rel',
          name: 'Line',
          fieldMappings: [{ targetField: 'sku', targetFormula: 'Line.sku' }],
        },
      ],
    });
    expect(nq).toMatchObject({ blockType: 'NativeQuery', statement: 'SELECT 1' });
  });

  it('refuses versions it cannot upgrade, by code', () => {
    expect(() => upgradeMap({ version: '1.0', blocks: [] })).toThrow(
      expect.objectContaining({ code: 'MAP_UPGRADE_FAILED' }),
    );
    expect(() => upgradeMap('nope')).toThrow(expect.objectContaining({ code: 'MAP_UPGRADE_FAILED' }));
  });
});
