import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { upgradeMap } from '../../../src/maps/compiler/upgrade.js';
import { MapModel } from '../../../src/protocol/map.js';

const EXPORT = JSON.parse(fs.readFileSync(new URL('../../fixtures/maps-2.5/accounts-export.json', import.meta.url), 'utf8')) as unknown;

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
    expect(ifElse?.then?.[0]).toMatchObject({ name: 'Upsert_Contact', blockType: 'Upsert', action: 'InsertUpdate', useBulk: true, bulkCountPerOperation: 500, onErrorMessage: 'contact refused' });
    expect(ifElse?.then?.[0]?.fieldMappings).toEqual([{ targetField: 'email', targetDataType: 'String', targetFormula: 'LOWER(Query_Account.email)' }]);
    expect(ifElse?.else?.[0]).toMatchObject({ name: 'Skip', blockType: 'MapExit' });
    expect(lookup?.lookupConditions).toEqual([{ fieldName: 'id', comparisonOperator: '=', compareValue: 'Query_Account.owner_id' }]);
    expect(update).toMatchObject({ blockType: 'Update', useBulk: false });
  });

  it('is pure and its output is a valid 3.0 model that upgrades to itself', () => {
    const before = JSON.stringify(EXPORT);
    const m = upgradeMap(EXPORT);
    expect(JSON.stringify(EXPORT)).toBe(before);
    expect(MapModel.safeParse(m).success).toBe(true);
    expect(upgradeMap(m)).toEqual(m);
  });

  it('refuses versions it cannot upgrade, by code', () => {
    expect(() => upgradeMap({ version: '1.0', blocks: [] })).toThrow(expect.objectContaining({ code: 'MAP_UPGRADE_FAILED' }));
    expect(() => upgradeMap('nope')).toThrow(expect.objectContaining({ code: 'MAP_UPGRADE_FAILED' }));
  });
});
