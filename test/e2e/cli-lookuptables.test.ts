/**
 * `ferry lookuptables list|import|export` run as real processes against a real Service: tables
 * created from CSV and JSON files, their values replaced or appended to, an import refused as a
 * whole, and exports that import back unchanged (the JSON one is the file `ferry map run
 * --lookup-tables` reads).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readLookupTablesFile } from '../../src/cli/lookup-tables-file.js';
import { CLI_SUITE_TIMEOUT_MS, ferry, HAS_SCRIPT, parse } from '../helpers/cli.js';
import { startService, type TestService } from '../helpers/service.js';
import { STORE_TARGETS } from '../helpers/stores.js';

interface Imported {
  lookupTableId: string;
  name: string;
  created: boolean;
  valuesImported: number;
  valuesRemoved: number;
  valueCount: number;
}

interface Table {
  id: string;
  name: string;
  description: string | null;
  lookupTableValues: Array<{ value1: string; value2: string }>;
}

describe('ferry lookuptables against a real Service', { timeout: CLI_SUITE_TIMEOUT_MS }, () => {
  let svc: TestService;
  let tmp: string;
  const file = (name: string, text: string): string => {
    const p = path.join(tmp, name);
    fs.writeFileSync(p, text);
    return p;
  };
  /** The table's values as the API answers them, in order. */
  const valuesOf = async (name: string): Promise<Array<[string, string]>> => {
    const list = await svc.request<Table[]>('GET', `/v1/orgs/${svc.orgId}/lookuptables?includeLookupTableValues=true`);
    const t = list.body.find((x) => x.name === name);
    if (!t) throw new Error(`no table ${name}`);
    return t.lookupTableValues.map((v) => [v.value1, v.value2]);
  };

  beforeAll(async () => {
    svc = await startService(STORE_TARGETS[0] ?? { name: 'sqlite' }, { cloudAgents: 'off' });
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-cli-lookuptables-'));
  });
  afterAll(async () => {
    await svc?.close();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('imports a CSV file into a new table named after the file, quoted values and all', async () => {
    const csv = file('Countries.csv', 'code,country\nNO,Norway\nSE,Sweden\n"CH","Switzerland, ""CH"""\n');
    const run = await ferry(svc, ['lookuptables', 'import', csv, '--description', 'ISO 3166']);
    expect(run.code, run.stderr).toBe(0);
    expect(parse<Imported[]>(run.stdout)).toEqual([
      expect.objectContaining({ name: 'Countries', created: true, valuesImported: 3, valuesRemoved: 0, valueCount: 3 }),
    ]);
    expect(await valuesOf('Countries')).toEqual([
      ['NO', 'Norway'],
      ['SE', 'Sweden'],
      ['CH', 'Switzerland, "CH"'],
    ]);
  });

  it("replaces an existing table's values (found by name in any case), or appends with --append", async () => {
    const replaced = await ferry(svc, [
      'lookuptables',
      'import',
      file('next.csv', 'DK,Denmark\nFI,Finland\n'),
      '--name',
      'COUNTRIES',
      '--no-header',
    ]);
    expect(replaced.code, replaced.stderr).toBe(0);
    expect(parse<Imported[]>(replaced.stdout)).toEqual([
      expect.objectContaining({
        name: 'Countries',
        created: false,
        valuesImported: 2,
        valuesRemoved: 3,
        valueCount: 2,
      }),
    ]);
    const appended = await ferry(svc, [
      'lookuptables',
      'import',
      file('more.csv', 'value1,value2\nIS,Iceland\n'),
      '--name',
      'Countries',
      '--append',
    ]);
    expect(parse<Imported[]>(appended.stdout)).toEqual([
      expect.objectContaining({ created: false, valuesImported: 1, valuesRemoved: 0, valueCount: 3 }),
    ]);
    expect(await valuesOf('Countries')).toEqual([
      ['DK', 'Denmark'],
      ['FI', 'Finland'],
      ['IS', 'Iceland'],
    ]);
  });

  it('imports a Lookup Tables JSON file (several tables) and a list of pairs from stdin', async () => {
    const json = file(
      'tables.json',
      JSON.stringify({
        States: [{ value1: 'California', value2: 'CA' }, ['Texas', 'TX']],
        Codes: [
          ['A', '1'],
          ['B', 'line\nbreak'],
        ],
      }),
    );
    const run = await ferry(svc, ['lookuptables', 'import', json]);
    expect(run.code, run.stderr).toBe(0);
    expect(parse<Imported[]>(run.stdout).map((t) => [t.name, t.created, t.valueCount])).toEqual([
      ['States', true, 2],
      ['Codes', true, 2],
    ]);
    expect(await valuesOf('Codes')).toEqual([
      ['A', '1'],
      ['B', 'line\nbreak'],
    ]);
    const piped = await ferry(svc, ['lookuptables', 'import', '-', '--format', 'json', '--name', 'States'], {
      input: JSON.stringify([['Ohio', 'OH']]),
    });
    expect(piped.code, piped.stderr).toBe(0);
    expect(await valuesOf('States')).toEqual([['Ohio', 'OH']]);
  });

  it('refuses a bad file as a whole: the Service names the line (exit 1) and a table it would have created is not left behind', async () => {
    const bad = await ferry(svc, ['lookuptables', 'import', file('Broken.csv', 'value1,value2\nA,1\nB,2,3\n')]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^ferry: 400 .*Line 3 of the CSV text.*\(API_INVALID_CSV\)\n$/);
    const names = parse<Array<{ name: string }>>((await ferry(svc, ['lookuptables', 'list'])).stdout).map(
      (t) => t.name,
    );
    expect(names).not.toContain('Broken');
    // An existing table keeps its values.
    const kept = await ferry(svc, [
      'lookuptables',
      'import',
      file('c.csv', 'X,1\n,2\n'),
      '--name',
      'Countries',
      '--no-header',
    ]);
    expect(kept.code).toBe(1);
    expect((await valuesOf('Countries')).length).toBe(3);
    const emptyValue1 = await ferry(svc, [
      'lookuptables',
      'import',
      file('e.json', JSON.stringify({ E: [['', 'x']] })),
    ]);
    expect(emptyValue1.code).toBe(2);
    expect(emptyValue1.stderr).toContain('"E"[0] has an empty value1');
  });

  it('lists the tables as JSON when piped', async () => {
    const run = await ferry(svc, ['lookuptables', 'list']);
    expect(run.code, run.stderr).toBe(0);
    expect(parse<Table[]>(run.stdout).map((t) => [t.name, t.description])).toEqual([
      ['Codes', null],
      ['Countries', 'ISO 3166'],
      ['States', null],
    ]);
  });

  it('exports CSV to stdout and a Lookup Tables file to --out, each importing back unchanged', async () => {
    const csv = await ferry(svc, ['lookuptables', 'export', 'codes']);
    expect(csv.code, csv.stderr).toBe(0);
    expect(csv.stdout).toBe('value1,value2\r\nA,1\r\nB,"line\nbreak"\r\n');
    const back = await ferry(svc, ['lookuptables', 'import', file('Codes copy.csv', csv.stdout)]);
    expect(back.code, back.stderr).toBe(0);
    expect(await valuesOf('Codes copy')).toEqual(await valuesOf('Codes'));

    const out = path.join(tmp, 'codes-export.json');
    const json = await ferry(svc, ['lookuptables', 'export', 'Codes', '--out', out]);
    expect(json.code, json.stderr).toBe(0);
    expect(json.stdout).toBe('');
    expect(json.stderr).toContain(`Exported "Codes" to ${out}`);
    const read = await readLookupTablesFile(out);
    expect(read.map((t) => [t.name, [...t.values]])).toEqual([
      [
        'Codes',
        [
          { value1: 'A', value2: '1' },
          { value1: 'B', value2: 'line\nbreak' },
        ],
      ],
    ]);
    const id =
      parse<Table[]>((await ferry(svc, ['lookuptables', 'list'])).stdout).find((t) => t.name === 'Codes')?.id ?? '';
    const byId = await ferry(svc, ['lookuptables', 'export', id, '--json']);
    expect(parse<Record<string, unknown>>(byId.stdout)).toEqual({
      Codes: [
        { value1: 'A', value2: '1' },
        { value1: 'B', value2: 'line\nbreak' },
      ],
    });
  });

  it('says which table is unknown (exit 1) and refuses bad usage (exit 2)', async () => {
    const none = await ferry(svc, ['lookuptables', 'export', 'Count']);
    expect(none.code).toBe(1);
    expect(none.stderr).toBe(
      `ferry: No Lookup Table "Count" in Organization ${svc.orgId}; names containing it: "Countries"\n`,
    );
    expect((await ferry(svc, ['lookuptables', 'import'])).code).toBe(2);
    expect((await ferry(svc, ['lookuptables', 'import', '-'], { input: 'A,1\n' })).stderr).toContain('--name TABLE');
    expect((await ferry(svc, ['lookuptables', 'export', 'Codes', '--format', 'xml'])).code).toBe(2);
    const unknown = await ferry(svc, ['lookuptables', 'show']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe(
      'ferry: unknown command "show" for "ferry lookuptables"; its commands: list, import, export\n',
    );
  });

  it.skipIf(!HAS_SCRIPT)('prints a table and what each import did on a terminal', async () => {
    const list = await ferry(svc, ['lookuptables', 'list'], { terminal: true });
    expect(list.code, list.stdout).toBe(0);
    expect(list.stdout).toMatch(/ID\s+NAME\s+MODIFIED\s+DESCRIPTION/);
    expect(list.stdout).toMatch(/Countries\s+\S+\s+ISO 3166/);
    const run = await ferry(svc, ['lookuptables', 'import', file('Tiny.csv', 'A,1\n'), '--no-header'], {
      terminal: true,
    });
    expect(run.stdout).toContain('Imported 1 values into "Tiny" (created): 1 in all');
  });
});
