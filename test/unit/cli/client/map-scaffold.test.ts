import { describe, expect, it } from 'vitest';
import {
  blockName,
  fieldRef,
  matchFields,
  matchKey,
  scaffoldMap,
  targetFieldsOf,
  type EntityInfo,
  type FieldInfo,
} from '../../../../src/cli/client/map-scaffold.js';
import { MapModel } from '../../../../src/protocol/map.js';

const field = (fullName: string, o: Partial<FieldInfo> = {}): FieldInfo => ({
  fullName,
  isPrimaryKey: false,
  requiredInActionInput: false,
  hasDefault: false,
  usedInActionInput: true,
  usedInQuerySelect: true,
  ...o,
});

const people: EntityInfo = {
  fullName: 'people',
  fields: [
    field('Id'),
    field('First_Name'),
    field('LASTNAME'),
    field('e_mail'),
    field('Notes'),
    field('hidden', { usedInQuerySelect: false }),
  ],
};
const contacts: EntityInfo = {
  fullName: 'crm contacts',
  fields: [
    field('id', { isPrimaryKey: true, hasDefault: true }),
    field('firstname', { requiredInActionInput: true }),
    field('last_name'),
    field('Email'),
    field('phone', { requiredInActionInput: true }),
    field('created', { requiredInActionInput: true, hasDefault: true }),
    field('computed', { usedInActionInput: false }),
  ],
};

describe('matchFields', () => {
  it('matches names ignoring case and underscores, and lists what it could not match', () => {
    const { candidates, required } = targetFieldsOf('Create', contacts);
    const m = matchFields(people.fields, candidates, required);
    expect(m.pairs).toEqual([
      { source: 'Id', target: 'id' },
      { source: 'First_Name', target: 'firstname' },
      { source: 'LASTNAME', target: 'last_name' },
      { source: 'e_mail', target: 'Email' },
    ]);
    // Not readable source fields are not offered; a field the write cannot take is not a candidate.
    expect(m.unusedSource).toEqual(['Notes']);
    // Required: not defaulted by the datastore.
    expect(m.unmappedRequired).toEqual(['phone']);
  });

  it('prefers the exact spelling, then the same letters in another case, over another spelling', () => {
    const source = [field('first_name'), field('FirstName'), field('firstname')];
    expect(matchFields(source, [field('firstname')], []).pairs).toEqual([{ source: 'firstname', target: 'firstname' }]);
    expect(matchFields(source, [field('FIRSTNAME')], []).pairs).toEqual([{ source: 'FirstName', target: 'FIRSTNAME' }]);
    expect(matchFields(source, [field('First__Name')], []).pairs).toEqual([
      { source: 'first_name', target: 'First__Name' },
    ]);
    expect(matchKey('First__Name')).toBe('firstname');
  });

  it('asks of a keyed write its primary key, and of a Delete nothing but the key', () => {
    const update = targetFieldsOf('Update', contacts);
    expect(update.required.map((f) => f.fullName)).toEqual(['id']);
    const upsert = targetFieldsOf('Upsert', contacts);
    expect(upsert.required.map((f) => f.fullName)).toEqual(['id', 'firstname', 'phone']);
    const del = targetFieldsOf('Delete', contacts);
    expect(del.candidates.map((f) => f.fullName)).toEqual(['id']);
    expect(matchFields(people.fields, del.candidates, del.required).unusedSource).toEqual([
      'First_Name',
      'LASTNAME',
      'e_mail',
      'Notes',
    ]);
  });
});

describe('scaffoldMap', () => {
  it('builds a model the Map schema accepts: a Query and the write, formulas reading the Query', () => {
    const s = scaffoldMap({
      name: 'People to contacts',
      action: 'Upsert',
      operationName: 'Upsert',
      source: { connectionId: 'src', entity: people },
      target: { connectionId: 'dst', entity: contacts },
    });
    expect(MapModel.safeParse(s.model).success).toBe(true);
    const [query, write] = s.model.blocks;
    expect(query).toMatchObject({
      name: 'Query_people',
      blockType: 'Query',
      action: 'Query',
      connectionId: 'src',
      entity: 'people',
    });
    expect(write).toMatchObject({
      name: 'Upsert_crm_contacts',
      blockType: 'Upsert',
      action: 'InsertUpdate',
      connectionId: 'dst',
      entity: 'crm contacts',
    });
    expect(write?.fieldMappings?.map((m) => [m.targetField, m.targetFormula])).toEqual([
      ['id', 'Query_people.Id'],
      ['firstname', 'Query_people.First_Name'],
      ['last_name', 'Query_people.LASTNAME'],
      ['Email', 'Query_people.e_mail'],
    ]);
    expect(s.unmappedRequired).toEqual(['phone']);
    expect(s.notes).toEqual([]);
  });

  it('says when a keyed write has no primary key to find the record by', () => {
    const keyless: EntityInfo = { fullName: 'log', fields: [field('id')] };
    const s = scaffoldMap({
      name: 'M',
      action: 'Update',
      source: { connectionId: 'a', entity: people },
      target: { connectionId: 'b', entity: keyless },
    });
    expect(s.notes).toEqual([
      'log has no primary key: give the Update_log Block lookupConditions that find the record',
    ]);
  });

  it('brackets a field that is not a plain name, and keeps Block names within 50 characters', () => {
    expect(fieldRef('Query_x', 'First Name')).toBe('Query_x.[First Name]');
    expect(fieldRef('Query_x', 'a]b')).toBe('Query_x.[a]]b]');
    expect(fieldRef('Query_x', '2nd_line')).toBe('Query_x.2nd_line');
    expect(blockName('Query', 'dbo.Orders Archive')).toBe('Query_dbo_Orders_Archive');
    expect(blockName('Create', 'x'.repeat(80))).toHaveLength(50);
  });
});
