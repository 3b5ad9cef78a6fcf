/**
 * Every example of the catalogue runs through the real engine (compiler, sandbox, library) and
 * gives exactly the result the catalogue states. The catalogue is the conformance suite.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { FORMULA_FUNCTIONS, type ExampleContext, type FormulaExample } from '../../../../src/maps/formula/catalogue.js';
import { SPECIAL_FORMS } from '../../../../src/maps/formula/compiler.js';
import { FormulaEngine } from '../../../../src/maps/formula/evaluator.js';
import { evaluateOne, lookupTablesOf, recordOf } from '../../../helpers/formulas.js';

/** One engine per distinct set of Lookup Tables the examples give. */
const engines = new Map<string, Promise<FormulaEngine>>();
function engineFor(given: ExampleContext | undefined): Promise<FormulaEngine> {
  const key = JSON.stringify(given?.lookupTables ?? {});
  let engine = engines.get(key);
  if (!engine) {
    engine = FormulaEngine.create({ lookupTables: lookupTablesOf(given?.lookupTables) });
    engines.set(key, engine);
  }
  return engine;
}

afterAll(async () => {
  for (const engine of engines.values()) (await engine).dispose();
});

describe('the catalogue examples', () => {
  for (const fn of FORMULA_FUNCTIONS) {
    describe(fn.name, () => {
      it.each(fn.examples.map((e): [string, FormulaExample] => [e.formula, e]))('%s', async (_formula, example) => {
        const outcome = await evaluateOne(
          await engineFor(example.given),
          example.formula,
          recordOf(example.given?.fields),
        );
        expect(outcome).toEqual({ value: example.result });
      });
    });
  }
});

describe('the library', () => {
  it('implements every catalogue function, and nothing else', async () => {
    const engine = await engineFor(undefined);
    const inSandbox = new Set(await engine.sandbox.libraryFunctions());
    for (const special of SPECIAL_FORMS) inSandbox.add(special);
    expect([...inSandbox].sort()).toEqual(FORMULA_FUNCTIONS.map((f) => f.name).sort());
  });
});
