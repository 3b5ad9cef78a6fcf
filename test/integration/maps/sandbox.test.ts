/**
 * The formula sandbox with real isolates: escape attempts, the time and memory limits, and the
 * isolation of a batch's failures to the records that cause them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isFerryError } from '../../../src/errors/ferry-error.js';
import { compileFormulas, FormulaEngine } from '../../../src/maps/formula/evaluator.js';
import { ALLOWED_GLOBALS, RunFailure } from '../../../src/maps/formula/sandbox.js';
import { evaluateOne } from '../../helpers/formulas.js';

/** A regular expression that backtracks for about 2^28 steps on the record's text. */
const CATASTROPHIC = 'REGEXMATCH(Q.Text, "^(a+)+$")';
const SLOW_TEXT = `${'a'.repeat(28)}b`;
/** With Q.N = 4,000,000, builds an array of 8 million characters: far beyond a 32 MiB heap, within the text limit. */
const MEMORY_BOMB = 'LEN(REVERSE(REPEAT("ab", Q.N)))';

function compileError(formula: string): string {
  try {
    compileFormulas([formula]);
  } catch (err) {
    if (isFerryError(err)) return err.code;
    throw err;
  }
  return 'compiled';
}

describe('escape attempts', () => {
  let engine: FormulaEngine;
  beforeAll(async () => {
    engine = await FormulaEngine.create();
  });
  afterAll(() => engine.dispose());

  it('cannot name anything but catalogue functions and fields', () => {
    expect(compileError('require("fs")')).toBe('FML_UNKNOWN_FUNCTION');
    expect(compileError('eval("1")')).toBe('FML_UNKNOWN_FUNCTION');
    expect(compileError('process.exit(1)')).toBe('FML_SYNTAX');
    expect(compileError('process.mainModule.require("child_process")')).toBe('FML_SYNTAX');
    expect(compileError('constructor.constructor("return process")()')).toBe('FML_SYNTAX');
    expect(compileError('LEFT.constructor("return this")()')).toBe('FML_SYNTAX');
    expect(compileError('globalThis')).toBe('FML_SYNTAX');
    expect(compileError('UPPER`x`')).toBe('FML_SYNTAX');
    expect(compileError('x => 1')).toBe('FML_SYNTAX');
    expect(compileError('[1, 2]')).toBe('FML_SYNTAX');
  });

  it('reads fields named like prototype members as absent fields', async () => {
    const record = JSON.parse(
      '{"Q": {"__proto__": {"polluted": 1}}, "__proto__": {"Q": {"constructor": 1}}}',
    ) as Record<string, unknown>;
    const out = await evaluateOne(
      engine,
      'CONCATENATE(Q.[constructor], "|", Q.[toString], "|", Q.[__proto__], "|", [__proto__].[polluted])',
      record,
    );
    expect(out).toEqual({ value: '||{"polluted":1}|' });
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });

  it('has no require, process, timers, eval, Function, WebAssembly or shared memory inside', async () => {
    const seen = await engine.sandbox.evaluateScript(
      'JSON.stringify(["require", "process", "setTimeout", "setInterval", "queueMicrotask", "eval", "Function", "WebAssembly", "SharedArrayBuffer", "Atomics", "Proxy", "Reflect", "Promise", "console", "fetch"].map((n) => typeof globalThis[n]))',
    );
    expect(JSON.parse(seen as string)).toEqual(Array(15).fill('undefined'));
    const globals = JSON.parse(
      (await engine.sandbox.evaluateScript('JSON.stringify(Object.getOwnPropertyNames(globalThis))')) as string,
    ) as string[];
    for (const name of globals) expect([...ALLOWED_GLOBALS, '__name'], name).toContain(name);
  });

  it('finds no host through constructor tricks', async () => {
    const found = await engine.sandbox.evaluateScript(
      '[(function () {}).constructor("return typeof process + typeof require")(), ({}).constructor.constructor("return typeof this.process")(), typeof Error.captureStackTrace].join(",")',
    );
    expect(found).toBe('undefinedundefined,undefined,function');
  });

  it('keeps prototype pollution inside the isolate and out of the host', async () => {
    await engine.sandbox.evaluateScript('Object.prototype.polluted = "yes"; Array.prototype.push = null; 1');
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    expect(typeof Array.prototype.push).toBe('function');
  });

  it('copies only known error codes and details out of a malicious program', async () => {
    const compiled = compileFormulas(['1']);
    const payload = `(function () { return function run() {
      return '[[[{"__proto__": {"polluted": true}}]], [[0, 0, "NOT_A_CODE", "m", {"__proto__": {"polluted": true}, "value": "v", "secret": "s"}, 99, null]]]';
    }; })()`;
    const json = await engine.sandbox.run(payload, [['[]'], 0, 1, 2, 3, 4, -1], 1000);
    const [values, errors] = JSON.parse(json) as [
      unknown[][],
      [number, number, string, string, Record<string, unknown>, number, null][],
    ];
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    expect(Object.getPrototypeOf(values[0]?.[0])).toBe(Object.prototype);
    const { recordError } = await import('../../../src/maps/formula/wire.js');
    const error = recordError(compiled.info[0]!, errors[0]!);
    expect(error.error.code).toBe('FML_INTERNAL');
    expect(Object.keys(error.error.details ?? {}).sort()).toEqual(['formula', 'position', 'value']);
  });
});

describe('limits', () => {
  let engine: FormulaEngine;
  beforeAll(async () => {
    engine = await FormulaEngine.create({ memoryLimitMb: 32, timeLimitMs: 200 });
  });
  afterAll(() => engine.dispose());

  it('stops an endless program at the time limit and keeps the isolate usable', async () => {
    const started = performance.now();
    await expect(
      engine.sandbox.run(
        '(function () { return function run() { for (;;) {} }; })()',
        [['[]'], 0, 1, 2, 3, 4, -1],
        300,
      ),
    ).rejects.toMatchObject({
      kind: 'timeout',
    });
    expect(performance.now() - started).toBeLessThan(5000);
    expect(await evaluateOne(engine, '1 + 1')).toEqual({ value: 2 });
  });

  it('stops a program that allocates without end at the memory limit, then builds a new isolate', async () => {
    const before = engine.isolatesCreated;
    const bomb =
      '(function () { return function run() { const a = []; for (;;) a.push(new Array(100000).fill(Math.random())); }; })()';
    const failure = await engine.sandbox.run(bomb, [['[]'], 0, 1, 2, 3, 4, -1], 30_000).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(RunFailure);
    expect(failure).toMatchObject({ kind: 'memory' });
    expect(await evaluateOne(engine, 'UPPER("still here")')).toEqual({ value: 'STILL HERE' });
    expect(engine.isolatesCreated).toBe(before + 1);
  });

  it('fails an exploding text with a clear record error before it is built', async () => {
    const out = await evaluateOne(engine, 'REPEAT("x", 1e9)');
    expect(out).toMatchObject({ error: { code: 'FML_TEXT_TOO_LONG', details: { function: 'REPEAT' } } });
    const nested = await evaluateOne(engine, 'REPEAT(REPEAT(REPEAT("x", 1000), 1000), 1000)');
    expect(nested).toMatchObject({ error: { code: 'FML_TEXT_TOO_LONG' } });
  });
});

describe('a batch with records that exceed the limits', () => {
  let engine: FormulaEngine;
  beforeAll(async () => {
    engine = await FormulaEngine.create({ memoryLimitMb: 32, timeLimitMs: 200 });
  });
  afterAll(() => engine.dispose());

  const batch = (bad: ReadonlySet<number>, n = 40) =>
    Array.from({ length: n }, (_, i) => ({
      Q: { Text: bad.has(i) ? SLOW_TEXT : 'aaa', N: bad.has(i) ? 4_000_000 : 3, I: i },
    }));

  it('fails only the records that run out of time', async () => {
    const compiled = compileFormulas({ Slow: CATASTROPHIC, Id: 'Q.I * 10' });
    const { values, errors } = await engine.evaluate(compiled, batch(new Set([3, 31])));
    expect(errors.map((e) => [e.record, e.key, e.error.code])).toEqual([
      [3, 'Slow', 'FML_TIMEOUT'],
      [31, 'Slow', 'FML_TIMEOUT'],
    ]);
    expect(errors[0]?.error).toMatchObject({
      kind: 'config',
      details: { formula: 'Slow', position: { line: 1, column: 1 } },
    });
    // The other formula of a failed record still has its value; every other record has both.
    expect(values[3]).toEqual([null, 30]);
    values.forEach((v, i) => {
      if (i !== 3 && i !== 31) expect(v).toEqual([true, i * 10]);
    });
  });

  it('fails only the records that run out of memory, and rebuilds the isolate', async () => {
    const before = engine.isolatesCreated;
    const compiled = compileFormulas([{ key: 'Len', formula: MEMORY_BOMB, blockId: 'blk' }]);
    const { values, errors } = await engine.evaluate(compiled, batch(new Set([17]), 24));
    expect(errors.map((e) => [e.record, e.error.code, e.error.details?.['blockId']])).toEqual([
      [17, 'FML_MEMORY_LIMIT', 'blk'],
    ]);
    values.forEach((v, i) => expect(v).toEqual([i === 17 ? null : 6]));
    expect(engine.isolatesCreated).toBeGreaterThan(before);
    expect(await evaluateOne(engine, 'LEN("ok")')).toEqual({ value: 2 });
  });

  it('keeps evaluating batches one after another when called concurrently', async () => {
    const compiled = compileFormulas(['Q.I + 1']);
    const results = await Promise.all(
      [0, 1, 2, 3].map((k) =>
        engine.evaluate(
          compiled,
          Array.from({ length: 50 }, (_, i) => ({ Q: { I: k * 100 + i } })),
        ),
      ),
    );
    results.forEach((r, k) =>
      expect(r.values.map((v) => v[0])).toEqual(Array.from({ length: 50 }, (_, i) => k * 100 + i + 1)),
    );
  });

  it('keeps host memory flat over many batches (no external strings left for a full GC)', async () => {
    const compiled = compileFormulas(['REPEAT(Q.Name, 4) & Q.I']);
    const batchOf = (b: number) =>
      Array.from({ length: 1000 }, (_, i) => ({ Q: { Name: `name-${i}-padding-to-make-it-longer`, I: b * 1000 + i } }));
    await engine.evaluate(compiled, batchOf(0));
    const before = process.memoryUsage().external;
    for (let b = 0; b < 300; b++) await engine.evaluate(compiled, batchOf(b));
    // 300,000 results of ~130 characters: ~40 MB would pile up if batches crossed as large strings.
    expect(process.memoryUsage().external - before).toBeLessThan(16 * 1024 * 1024);
  });

  it('refuses to evaluate after dispose()', async () => {
    const e = await FormulaEngine.create();
    e.dispose();
    await expect(e.evaluate(compileFormulas(['1']), [{}])).rejects.toMatchObject({ code: 'FML_SANDBOX' });
  });
});

describe('closing the sandbox', () => {
  it('waits for the call in flight, then frees the isolate', async () => {
    const engine = await FormulaEngine.create({ timeLimitMs: 2000 });
    // A regular expression that backtracks for a while: the call is still running when close() is asked.
    const pending = evaluateOne(engine, 'REGEXMATCH(Q.Text, "^(a+)+$")', { Q: { Text: `${'a'.repeat(22)}b` } });
    await engine.close();
    expect(await pending).toEqual({ value: false });
    expect(engine.sandbox.disposed).toBe(true);
    await expect(engine.evaluate(compileFormulas(['1 + 1']), [{}])).rejects.toMatchObject({ code: 'FML_SANDBOX' });
  });
});
