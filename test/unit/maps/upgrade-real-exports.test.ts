import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { upgradeMap } from '../../../src/maps/compiler/upgrade.js';
import { MapModel, walkBlocks } from '../../../src/protocol/map.js';

const ORDER_HUB = JSON.parse(
  fs.readFileSync(new URL('../../fixtures/maps-2.5/OrderHub.json', import.meta.url), 'utf8'),
) as unknown[];
const g = (k: number): string => `00000000-0000-4000-8000-${String(k).padStart(12, '0')}`;

describe('upgradeMap on what real 2.5 exports hold', () => {
  it('upgrades every Map of the OrderHub export to a valid 3.0 model that upgrades to itself', () => {
    expect(ORDER_HUB).toHaveLength(4);
    for (const m of ORDER_HUB) {
      const up = upgradeMap(m);
      expect(MapModel.safeParse(up).success).toBe(true);
      expect(upgradeMap(up)).toEqual(up);
    }
  });

  it('puts the Blocks of a Group in its place, reads Insert with actionName Command as a Create', () => {
    const m = upgradeMap({
      Name: 'Groups',
      StartingBlockId: g(1),
      Blocks: [
        { Id: g(1), BlockType: 'Query', Name: 'Q', ConnectionId: 'c', Entity: 'a', NextBlockId: g(2) },
        {
          Id: g(2),
          BlockType: 'Group',
          Category: 'Container',
          Name: 'Outer',
          PrevBlockId: g(1),
          NextBlockId: g(6),
          FirstChildBlockId: g(3),
        },
        {
          Id: g(3),
          BlockType: 'Insert',
          ActionName: 'Command',
          Name: 'Cmd',
          ConnectionId: 'c',
          Entity: 'run_job',
          ParentBlockId: g(2),
          NextBlockId: g(4),
        },
        {
          Id: g(4),
          BlockType: 'Group',
          Name: 'Inner',
          ParentBlockId: g(2),
          PrevBlockId: g(3),
          FirstChildBlockId: g(5),
        },
        {
          Id: g(5),
          BlockType: 'Operation',
          ActionName: 'Delete',
          Name: 'Del',
          ConnectionId: 'c',
          Entity: 'a',
          ParentBlockId: g(4),
        },
        { Id: g(6), BlockType: 'MapExit', Name: 'Done', PrevBlockId: g(2) },
      ],
    });
    expect(m.blocks.map((b) => [b.name, b.blockType, b.action])).toEqual([
      ['Q', 'Query', 'Query'],
      ['Cmd', 'Create', 'Create'],
      ['Del', 'Delete', 'Delete'],
      ['Done', 'MapExit', 'None'],
    ]);
  });

  it('reads numeric and named comparison operators in filters, lookups and expressions', () => {
    const m = upgradeMap({
      Name: 'Codes',
      StartingBlockId: g(1),
      Blocks: [
        {
          Id: g(1),
          BlockType: 'Query',
          Name: 'Q',
          ConnectionId: 'c',
          Entity: 'a',
          NextBlockId: g(2),
          FilterItems: [
            { FieldName: 'a', ComparisonOperator: 0, CompareValue: '1' },
            { FieldName: 'b', ComparisonOperator: 1, CompareValue: '"x"' },
            { FieldName: 'c', ComparisonOperator: 5, CompareValue: '3' },
            { FieldName: 'd', ComparisonOperator: 6 },
            { FieldName: 'e', ComparisonOperator: '7' },
            { FieldName: 'f', ComparisonOperator: 8, CompareValue: '"ab%"' },
            { FieldName: 'g', ComparisonOperator: 9, CompareValue: '"z%"' },
            { FieldName: 'h', ComparisonOperator: 'LessThan', CompareValue: '2' },
          ],
        },
        {
          Id: g(2),
          BlockType: 'Lookup',
          Name: 'L',
          ConnectionId: 'c',
          Entity: 'b',
          PrevBlockId: g(1),
          NextBlockId: g(3),
          FilterItems: [
            { FieldName: 'id', ComparisonOperator: 2, CompareValue: 'Q.a' },
            { FieldName: 'x', ComparisonOperator: 6 },
            { FieldName: 'y', ComparisonOperator: 'NotEqual', CompareValue: 'Q.b' },
          ],
        },
        {
          Id: g(3),
          BlockType: 'IfElse',
          Name: 'I',
          PrevBlockId: g(2),
          ExpressionItems: [
            { LeftValue: 'L.id', ComparisonOperator: 7 },
            { LeftValue: 'Q.a', ComparisonOperator: 3, RightValue: '5' },
          ],
        },
      ],
    });
    const [q, l, i] = m.blocks;
    expect(q?.filter).toEqual({
      op: 'and',
      args: [
        { op: '=', field: 'a', value: 1 },
        { op: '<>', field: 'b', value: 'x' },
        { op: '>=', field: 'c', value: 3 },
        { op: 'isNull', field: 'd' },
        { op: 'not', arg: { op: 'isNull', field: 'e' } },
        { op: 'like', field: 'f', pattern: 'ab%' },
        { op: 'not', arg: { op: 'like', field: 'g', pattern: 'z%' } },
        { op: '<', field: 'h', value: 2 },
      ],
    });
    expect(l?.lookupConditions).toEqual([
      { fieldName: 'id', comparisonOperator: '<', compareValue: 'Q.a' },
      { fieldName: 'x', comparisonOperator: '=', compareValue: 'null' },
      { fieldName: 'y', comparisonOperator: '<>', compareValue: 'Q.b' },
    ]);
    expect(i?.condition).toBe('(NOT ISNULL(L.id)) AND (Q.a <= 5)');
    expect([...walkBlocks(m.blocks)]).toHaveLength(3);
  });
});
