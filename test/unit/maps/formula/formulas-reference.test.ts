/**
 * docs/formulas.md and the engine agree:
 * - its "Function reference" is exactly the catalogue, rendered (every function, with all its
 *   examples): regenerate it with `UPDATE_FORMULA_DOCS=1 npx vitest run test/unit/maps/formula/formulas-reference.test.ts`;
 * - every example written as a list item — `- \`formula\` → \`result\``, `→ error \`CODE\``, with
 *   an optional `— with --record \`{…}\`` and `— with --lookup-tables \`{…}\``, the arguments of
 *   `ferry formula eval` — runs through the engine and gives what the page says.
 */
import fs from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import {
  FORMULA_FUNCTIONS,
  FUNCTION_CATEGORIES,
  type ExampleContext,
  type FormulaExample,
  type FormulaFunction,
  type JsonValue,
} from '../../../../src/maps/formula/catalogue.js';
import { FormulaEngine } from '../../../../src/maps/formula/evaluator.js';
import type { FormulaRecord } from '../../../../src/maps/formula/evaluator.js';
import { evaluateOne, lookupTablesOf, recordOf } from '../../../helpers/formulas.js';

const DOC = new URL('../../../../docs/formulas.md', import.meta.url);
const START = '<!-- function-reference:start -->';
const END = '<!-- function-reference:end -->';

/** An example as the page writes it: the context as the `--record` and `--lookup-tables` of `ferry formula eval`. */
function exampleLine(e: FormulaExample): string {
  const record = e.given?.fields ? ` — with --record \`${JSON.stringify(recordOf(e.given.fields))}\`` : '';
  const tables = e.given?.lookupTables ? ` — with --lookup-tables \`${JSON.stringify(e.given.lookupTables)}\`` : '';
  return `- \`${e.formula}\` → \`${JSON.stringify(e.result)}\`${record}${tables}`;
}

function renderFunction(f: FormulaFunction): string {
  return [
    `#### ${f.name}`,
    '',
    `\`${f.signature}\` — ${f.category}, returns ${f.returns}.`,
    '',
    f.description,
    '',
    ...f.examples.map(exampleLine),
  ].join('\n');
}

/** The reference: by category in display order, then by name, as the Functions table sorts. */
function renderReference(): string {
  const parts = [
    'Every function with all its catalogue examples (generated from `src/maps/formula/catalogue.ts`; every example runs as a test).',
  ];
  for (const category of FUNCTION_CATEGORIES) {
    parts.push(`### ${category}`);
    const fns = FORMULA_FUNCTIONS.filter((f) => f.category === category).sort((a, b) => (a.name < b.name ? -1 : 1));
    parts.push(fns.map(renderFunction).join('\n\n'));
  }
  return parts.join('\n\n');
}

interface DocExample {
  formula: string;
  result?: JsonValue;
  errorCode?: string;
  record?: FormulaRecord;
  lookupTables?: ExampleContext['lookupTables'];
}

const LINE =
  /^- `(.+?)` → (?:`(.+?)`|error `([A-Z_]+)`)(?: — with --record `(.+?)`)?(?: — with --lookup-tables `(.+)`)?$/;

function docExamples(doc: string): DocExample[] {
  const out: DocExample[] = [];
  for (const line of doc.split('\n')) {
    const m = LINE.exec(line);
    if (!m) continue;
    const [, formula, result, errorCode, record, tables] = m;
    out.push({
      formula: formula as string,
      ...(result !== undefined ? { result: JSON.parse(result) as JsonValue } : {}),
      ...(errorCode !== undefined ? { errorCode } : {}),
      ...(record !== undefined ? { record: JSON.parse(record) as FormulaRecord } : {}),
      ...(tables !== undefined ? { lookupTables: JSON.parse(tables) as ExampleContext['lookupTables'] } : {}),
    });
  }
  return out;
}

describe('docs/formulas.md', () => {
  let doc = fs.readFileSync(DOC, 'utf8');

  it('holds the function reference rendered from the catalogue', () => {
    const rendered = `${START}\n${renderReference()}\n${END}`;
    const at = doc.indexOf(START);
    const end = doc.indexOf(END);
    expect(at, 'the reference markers are missing').toBeGreaterThanOrEqual(0);
    const current = doc.slice(at, end + END.length);
    if (process.env['UPDATE_FORMULA_DOCS'] === '1' && current !== rendered) {
      doc = doc.slice(0, at) + rendered + doc.slice(end + END.length);
      fs.writeFileSync(DOC, doc);
    }
    expect(
      doc.slice(doc.indexOf(START), doc.indexOf(END) + END.length),
      'run with UPDATE_FORMULA_DOCS=1 to regenerate',
    ).toBe(rendered);
  });

  it('gives every catalogue example in the reference', () => {
    const examples = new Set(docExamples(doc).map((e) => e.formula));
    for (const f of FORMULA_FUNCTIONS)
      for (const e of f.examples) expect(examples, `${f.name}: ${e.formula}`).toContain(e.formula);
  });

  describe('every example on the page', () => {
    const engines = new Map<string, Promise<FormulaEngine>>();
    afterAll(async () => {
      for (const e of engines.values()) (await e).dispose();
    });
    const engineFor = (tables: ExampleContext['lookupTables']): Promise<FormulaEngine> => {
      const key = JSON.stringify(tables ?? {});
      let e = engines.get(key);
      if (!e) engines.set(key, (e = FormulaEngine.create({ lookupTables: lookupTablesOf(tables) })));
      return e;
    };
    const examples = docExamples(doc);

    it('is found', () => expect(examples.length).toBeGreaterThan(300));

    it.each(examples.map((e): [string, DocExample] => [e.formula, e]))('%s', async (_formula, e) => {
      const out = await evaluateOne(await engineFor(e.lookupTables), e.formula, e.record ?? {});
      if (e.errorCode !== undefined) expect(out).toMatchObject({ error: { code: e.errorCode } });
      else expect(out).toEqual({ value: e.result });
    });
  });
});
