/**
 * `ferry maps …` run as real processes against a real Service and a real Agent: a CSV folder of
 * people and a SQLite database of contacts, whose metadata the Agent loads. The Map `new`
 * scaffolds is run to its end and its rows read back from SQLite.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_SUITE_TIMEOUT_MS, ferry, HAS_SCRIPT, parse } from '../helpers/cli.js';
import type { ServiceUnderTest } from './agent/harness.js';
import { createConnection, createSolution, CSV, SQLITE, startWithAgent, stopAll } from './solutions/harness.js';

interface Mapping {
  targetField: string;
  targetFormula: string;
}
interface Block {
  name: string;
  blockType: string;
  entity?: string;
  connectionId?: string;
  fieldMappings?: Mapping[];
}
interface MapAnswer {
  id: number;
  name: string;
  revision: number;
  revisionComment: string;
  valid: boolean;
  lastRunDate: string | null;
  blocks: Block[];
}
interface Saved extends MapAnswer {
  validated: boolean;
  errors: Array<{ blockName: string | null; code: string; message: string }>;
  unusedSourceFields?: string[];
  unmappedRequiredFields?: string[];
}

const PEOPLE =
  'Id,First_Name,LASTNAME,e_mail,Notes\n1,Ann,Lee,ann@example.com,first\n2,Bob,Ray,bob@example.com,second\n';

describe('ferry maps against a real Service and Agent', { timeout: CLI_SUITE_TIMEOUT_MS }, () => {
  let sut: ServiceUnderTest;
  let db: string;
  let solutionId: string;
  let filesId: string;
  let crmId: string;
  let tmp: string;

  beforeAll(async () => {
    const bed = await startWithAgent({
      csv: { people: PEOPLE },
      fields: [
        { name: 'Id', type: 'integer' },
        { name: 'First_Name', type: 'string' },
        { name: 'LASTNAME', type: 'string' },
        { name: 'e_mail', type: 'string' },
        { name: 'Notes', type: 'string' },
      ],
    });
    sut = bed.sut;
    tmp = fs.mkdtempSync(path.join(sut.dataDir, 'files-'));
    db = path.join(sut.dataDir, 'crm.db');
    const d = new Database(db);
    d.exec(
      'CREATE TABLE contacts (id INTEGER PRIMARY KEY, firstname TEXT NOT NULL, last_name TEXT, email TEXT, phone TEXT)',
    );
    d.exec('CREATE TABLE strict_contacts (id INTEGER PRIMARY KEY, firstname TEXT, phone TEXT NOT NULL)');
    d.close();
    filesId = await createConnection(sut, 'People files', CSV, { folder: bed.folder });
    crmId = await createConnection(sut, 'CRM', SQLITE, { file: db });
    solutionId = (await createSolution(sut, bed.agent.agentId, 'People sync', [])).id;
  }, 240_000);

  afterAll(() => stopAll(sut));

  let mapId: number;
  it('new: scaffolds a Map by matching field names, which validates and runs', { timeout: 240_000 }, async () => {
    const run = await ferry(sut, [
      'maps',
      'new',
      'people SYNC',
      '--name',
      'People to contacts',
      '--source',
      'People files:people',
      '--target',
      `${crmId}:contacts`,
    ]);
    expect(run.code, run.stderr).toBe(0);
    const saved = parse<Saved>(run.stdout);
    mapId = saved.id;
    expect(saved).toMatchObject({ name: 'People to contacts', revision: 1, valid: true, validated: true, errors: [] });
    expect(saved.blocks.map((b) => [b.blockType, b.entity, b.connectionId])).toEqual([
      ['Query', 'people', filesId],
      ['Create', 'contacts', crmId],
    ]);
    expect(saved.blocks[1]?.fieldMappings).toEqual([
      { targetField: 'id', targetFormula: 'Query_people.Id' },
      { targetField: 'firstname', targetFormula: 'Query_people.First_Name' },
      { targetField: 'last_name', targetFormula: 'Query_people.LASTNAME' },
      { targetField: 'email', targetFormula: 'Query_people.e_mail' },
    ]);
    expect(saved.unusedSourceFields).toEqual(['Notes']);
    expect(saved.unmappedRequiredFields).toEqual([]);

    // The scaffold is a working Map: the Solution prepares, runs, and the rows arrive.
    const started = await ferry(sut, ['solutions', 'start', 'People sync', '--watch', '--interval', '0.5']);
    expect(started.code, started.stderr).toBe(0);
    const rows = new Database(db, { readonly: true })
      .prepare('SELECT id, firstname, last_name, email FROM contacts ORDER BY id')
      .all();
    expect(rows).toEqual([
      { id: 1, firstname: 'Ann', last_name: 'Lee', email: 'ann@example.com' },
      { id: 2, firstname: 'Bob', last_name: 'Ray', email: 'bob@example.com' },
    ]);
  });

  it('new: lists the required target fields it could not fill; refuses a taken name, an unknown entity or action', async () => {
    const run = await ferry(sut, [
      'maps',
      'new',
      'People sync',
      '--name',
      'Strict',
      '--source',
      'People files:people',
      '--target',
      'CRM:strict_contacts',
      '--action',
      'upsert',
    ]);
    expect(run.code, run.stderr).toBe(0);
    const saved = parse<Saved>(run.stdout);
    expect(saved.blocks[1]).toMatchObject({ blockType: 'Upsert', entity: 'strict_contacts' });
    expect(saved.blocks[1]?.fieldMappings?.map((m) => m.targetField)).toEqual(['id', 'firstname']);
    expect(saved.unmappedRequiredFields).toEqual(['phone']);
    expect(saved.unusedSourceFields).toEqual(['LASTNAME', 'e_mail', 'Notes']);

    const human = await ferry(
      sut,
      [
        'maps',
        'new',
        'People sync',
        '--name',
        'Dry',
        '--source',
        'People files:people',
        '--target',
        'CRM:strict_contacts',
        '--dry-run',
      ],
      { terminal: true },
    );
    if (HAS_SCRIPT) {
      expect(human.code, human.stdout).toBe(0);
      expect(human.stdout).toContain('"name": "Dry"');
      expect(human.stdout).toContain('Required target fields not mapped: phone');
    }

    const taken = await ferry(sut, [
      'maps',
      'new',
      'People sync',
      '--name',
      'people to CONTACTS',
      '--source',
      'People files:people',
      '--target',
      'CRM:contacts',
    ]);
    expect(taken.code).toBe(1);
    expect(taken.stderr).toBe(
      `ferry: "People sync" already has a Map named "People to contacts" (ID ${mapId}): choose another --name, or edit that Map\n`,
    );
    const noEntity = await ferry(sut, [
      'maps',
      'new',
      'People sync',
      '--name',
      'X',
      '--source',
      'People files:nosuch',
      '--target',
      'CRM:contacts',
    ]);
    expect(noEntity.code).toBe(1);
    expect(noEntity.stderr).toMatch(/^ferry: 404 .*nosuch/);
    const badAction = await ferry(sut, [
      'maps',
      'new',
      'People sync',
      '--name',
      'X',
      '--source',
      'People files:people',
      '--target',
      'CRM:contacts',
      '--action',
      'Merge',
    ]);
    expect(badAction.code).toBe(2);
    expect(badAction.stderr).toMatch(/^ferry: --action Merge: give one of Create, Update, Upsert/);
    const noTarget = await ferry(sut, ['maps', 'new', 'People sync', '--name', 'X', '--source', 'People files:people']);
    expect(noTarget.code).toBe(2);
  });

  it('list: the Maps in run order, JSON when piped and a table on a terminal', async () => {
    const run = await ferry(sut, ['maps', 'list', 'People sync']);
    expect(run.code, run.stderr).toBe(0);
    expect(parse<MapAnswer[]>(run.stdout).map((m) => m.name)).toEqual(['People to contacts', 'Strict']);
    const some = await ferry(sut, ['maps', 'list', solutionId, '--name', 'STRICT']);
    expect(parse<MapAnswer[]>(some.stdout).map((m) => m.name)).toEqual(['Strict']);
    if (!HAS_SCRIPT) return;
    const table = await ferry(sut, ['maps', 'list', 'People sync'], { terminal: true });
    expect(table.code, table.stdout).toBe(0);
    const lines = table.stdout.split(/\r?\n/).filter(Boolean);
    expect(lines[0]).toMatch(/^#\s+ID\s+NAME\s+REV\s+ENABLED\s+VALID\s+BLOCKS\s+MODIFIED$/);
    expect(lines[1]).toMatch(new RegExp(`^0\\s+${mapId}\\s+People to contacts\\s+1\\s+yes\\s+yes\\s+2\\s`));
  });

  it('show: a Map by name in any case or by ID, its Blocks with their Connections by name', async () => {
    const byName = await ferry(sut, ['maps', 'show', 'People sync', 'PEOPLE TO CONTACTS']);
    expect(byName.code, byName.stderr).toBe(0);
    expect(parse<MapAnswer>(byName.stdout).id).toBe(mapId);
    const none = await ferry(sut, ['maps', 'show', 'People sync', 'People']);
    expect(none.code).toBe(1);
    expect(none.stderr).toBe(
      'ferry: No Map named "People" in Solution "People sync"; names containing it: "People to contacts"\n',
    );
    if (!HAS_SCRIPT) return;
    const shown = await ferry(sut, ['maps', 'show', 'People sync', String(mapId)], { terminal: true });
    expect(shown.code, shown.stdout).toBe(0);
    expect(shown.stdout).toMatch(/Place:\s+0 in the run order/);
    expect(shown.stdout).toMatch(/Query_people\s+Query\s+People files\s+people/);
    expect(shown.stdout).toMatch(/Create_contacts\s+Create\s+CRM\s+contacts\s+4/);
  });

  let exported: string;
  it('export: the model as a file, without what the Service keeps; import creates from it or replaces a Map', async () => {
    const out = path.join(tmp, 'map.json');
    const run = await ferry(sut, ['maps', 'export', 'People sync', 'People to contacts', '--out', out]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain(`Wrote Map ${mapId} "People to contacts" (revision 1) to ${out}`);
    exported = fs.readFileSync(out, 'utf8');
    const model = parse<Record<string, unknown> & { blocks: Block[] }>(exported);
    expect(Object.keys(model).sort()).toEqual(['blocks', 'mapType', 'name', 'version']);
    const stdout = await ferry(sut, ['maps', 'export', 'People sync', String(mapId)]);
    expect(stdout.stdout).toBe(exported);

    const again = await ferry(sut, ['maps', 'import', 'People sync', out]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('already has a Map named "People to contacts"');

    const copy = path.join(tmp, 'copy.json');
    fs.writeFileSync(copy, JSON.stringify({ ...model, name: 'Contacts copy' }));
    const created = await ferry(sut, ['maps', 'import', 'People sync', copy]);
    expect(created.code, created.stderr).toBe(0);
    const made = parse<Saved>(created.stdout);
    expect(made).toMatchObject({
      name: 'Contacts copy',
      revision: 1,
      valid: true,
      revisionComment: 'Imported from copy.json',
    });
    expect(made.id).not.toBe(mapId);
    expect(made.blocks).toEqual(model.blocks);

    const strict = await ferry(sut, ['maps', 'export', 'People sync', 'Strict']);
    const replaced = await ferry(
      sut,
      ['maps', 'import', 'People sync', '-', '--map', 'Contacts copy', '--comment', 'from Strict'],
      { input: strict.stdout },
    );
    expect(replaced.code, replaced.stderr).toBe(0);
    expect(parse<Saved>(replaced.stdout)).toMatchObject({
      id: made.id,
      name: 'Strict',
      revision: 2,
      revisionComment: 'from Strict',
    });

    // A file of several Maps (the Service's export) goes through the import endpoint.
    const list = path.join(tmp, 'maps.json');
    fs.writeFileSync(list, JSON.stringify([{ ...model, name: 'From a list' }]));
    const listed = await ferry(sut, ['maps', 'import', 'People sync', list]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(parse<{ maps: Array<{ name: string; action: string }> }>(listed.stdout).maps).toEqual([
      expect.objectContaining({ name: 'From a list', action: 'Created' }),
    ]);
  });

  it('edit: saves a model from --file with its errors per Block (exit 1); needs --file off a terminal', async () => {
    const model = parse<{ blocks: Block[] }>(exported);
    const broken = structuredClone(model);
    const mapping = broken.blocks[1]?.fieldMappings?.[3];
    if (mapping) mapping.targetField = 'emial';
    const file = path.join(tmp, 'broken.json');
    fs.writeFileSync(file, JSON.stringify({ ...broken, lastRunDate: '2024-01-01T00:00:00.000Z' }));
    const run = await ferry(sut, [
      'maps',
      'edit',
      'People sync',
      'People to contacts',
      '--file',
      file,
      '--comment',
      'typo',
    ]);
    expect(run.code).toBe(1);
    expect(parse<Saved>(run.stdout)).toMatchObject({ id: mapId, revision: 2, valid: false, revisionComment: 'typo' });
    expect(run.stderr).toMatch(
      /^ferry: revision 2 of "People to contacts" does not validate:\n {2}Block Create_contacts: .*emial.*\(MAP_FIELD_NOT_FOUND\)\n/,
    );
    // A model that sets where net change reads from sets it.
    const after = parse<MapAnswer>((await ferry(sut, ['maps', 'show', 'People sync', String(mapId)])).stdout);
    expect(after.lastRunDate).toBe('2024-01-01T00:00:00.000Z');

    const refused = await ferry(sut, ['maps', 'edit', 'People sync', String(mapId), '--file', '-'], {
      input: JSON.stringify({ version: '3.0', name: 'X', blocks: [] }),
    });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/ferry: 400 /);

    const noFile = await ferry(sut, ['maps', 'edit', 'People sync', String(mapId)]);
    expect(noFile.code).toBe(2);
    expect(noFile.stderr).toBe('ferry: not on a terminal: give the model to save with --file FILE (- for stdin)\n');
  });

  it('edit: opens the model in $EDITOR on a terminal and saves what was changed, nothing when nothing was', async () => {
    if (!HAS_SCRIPT) return;
    const editor = path.join(tmp, 'fix-email.sh');
    // It also takes out lastRunDate: a model that does not set it keeps the Map's.
    const script = `sed -i '/"lastRunDate"/d; s/"emial"/"email"/; s/"Query_people.e_mail"/"LOWER(Query_people.e_mail)"/' "$1"`;
    fs.writeFileSync(editor, `#!/bin/sh\n${script}\n`, { mode: 0o755 });
    const run = await ferry(sut, ['maps', 'edit', 'People sync', 'People to contacts'], {
      terminal: true,
      env: { VISUAL: '', EDITOR: editor },
    });
    expect(run.code, run.stdout).toBe(0);
    expect(run.stdout).toContain(`Saved Map ${mapId} "People to contacts", revision 3`);
    const shown = parse<MapAnswer>((await ferry(sut, ['maps', 'show', 'People sync', String(mapId)])).stdout);
    expect(shown.blocks[1]?.fieldMappings?.[3]).toEqual({
      targetField: 'email',
      targetFormula: 'LOWER(Query_people.e_mail)',
    });
    expect(shown).toMatchObject({ revision: 3, valid: true, lastRunDate: '2024-01-01T00:00:00.000Z' });

    const spoilt = path.join(tmp, 'spoil.sh');
    fs.writeFileSync(spoilt, `#!/bin/sh\necho '{"version":' > "$1"\n`, { mode: 0o755 });
    const notJson = await ferry(sut, ['maps', 'edit', 'People sync', String(mapId)], {
      terminal: true,
      env: { EDITOR: spoilt },
    });
    expect(notJson.code).toBe(2);
    expect(notJson.stdout).toMatch(/ferry: The edited model is not JSON/);
    const kept = /Your edit is kept in (\S+):/.exec(notJson.stdout)?.[1];
    expect(kept && fs.readFileSync(kept, 'utf8')).toBe('{"version":\n');

    const unchanged = await ferry(sut, ['maps', 'edit', 'People sync', String(mapId)], {
      terminal: true,
      env: { EDITOR: 'true' },
    });
    expect(unchanged.code, unchanged.stdout).toBe(0);
    expect(unchanged.stdout).toContain('No change to "People to contacts": nothing saved');
    expect(parse<MapAnswer>((await ferry(sut, ['maps', 'show', 'People sync', String(mapId)])).stdout).revision).toBe(
      3,
    );
  });

  it('validate: a stored Map or a model of a file, exit 1 with the errors per Block', async () => {
    const ok = await ferry(sut, ['maps', 'validate', 'People sync', String(mapId)]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(parse<{ valid: boolean; findings: unknown[] }>(ok.stdout)).toMatchObject({ valid: true });

    const model = parse<{ blocks: Block[] }>(exported);
    const mapping = model.blocks[1]?.fieldMappings?.[1];
    if (mapping) mapping.targetFormula = 'Query_people.FirstName';
    const file = path.join(tmp, 'wrong-source.json');
    fs.writeFileSync(file, JSON.stringify(model));
    const bad = await ferry(sut, ['maps', 'validate', 'People sync', String(mapId), '--file', file]);
    expect(bad.code).toBe(1);
    const result = parse<{
      valid: boolean;
      findings: Array<{ severity: string; blockName: string; field: string; message: string }>;
    }>(bad.stdout);
    expect(result.valid).toBe(false);
    expect(result.findings).toContainEqual(
      expect.objectContaining({ severity: 'error', blockName: 'Create_contacts', field: 'firstname' }),
    );
    expect(bad.stderr).toMatch(
      /^ferry: The model of .*wrong-source\.json does not validate: [1-9]\d* errors?, \d+ warnings?\n$/,
    );
  });

  it('revisions and revert: newest first, and an earlier revision restored as the next one', async () => {
    const run = await ferry(sut, ['maps', 'revisions', 'People sync', 'People to contacts']);
    expect(run.code, run.stderr).toBe(0);
    expect(
      parse<Array<{ revision: number; revisionComment: string }>>(run.stdout).map((r) => [
        r.revision,
        r.revisionComment,
      ]),
    ).toEqual([
      [3, ''],
      [2, 'typo'],
      [1, expect.any(String)],
    ]);
    const reverted = await ferry(sut, ['maps', 'revert', 'People sync', String(mapId), '--revision', '2']);
    expect(reverted.code, reverted.stderr).toBe(0);
    const map = parse<MapAnswer>(reverted.stdout);
    expect(map).toMatchObject({ id: mapId, revision: 4 });
    expect(map.blocks[1]?.fieldMappings?.[3]?.targetField).toBe('emial');
    const check = await ferry(sut, ['maps', 'validate', 'People sync', String(mapId)]);
    expect(check.code).toBe(1);
    const noRevision = await ferry(sut, ['maps', 'revert', 'People sync', String(mapId)]);
    expect(noRevision.code).toBe(2);
    const missing = await ferry(sut, ['maps', 'revert', 'People sync', String(mapId), '--revision', '99']);
    expect(missing.code).toBe(1);
  });

  it('says an unknown subcommand first, with exit 2', async () => {
    const run = await ferry(sut, ['maps', 'frob']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(
      /^ferry: unknown command "frob" for "ferry maps"; its commands: list, show, new, edit, validate, import, export, revisions, revert\n$/,
    );
  });
});
