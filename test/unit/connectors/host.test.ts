import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectorHost } from '../../../src/connectors/host.js';
import { ConnectorManifest } from '../../../src/protocol/connector-manifest.js';

/**
 * The plugin host against plugins written for the occasion: bad manifests, modules that throw on
 * load, and a toy plugin whose calls throw, reject, hang or break the contract on request
 * (`properties.mode`). Every failure must be a CON_ error of that call, never the process's end.
 */

const manifest = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
  id: '11111111-2222-4333-8444-555555555555',
  name: 'Toy',
  vendor: 'Ferry tests',
  version: '1.2.3',
  sdkVersion: '^1.0.0',
  main: 'index.mjs',
  solutionRoles: ['Svc.IS2.Source'],
  isCloudSupported: false,
  bulkLimit: 5,
  uiDecorations: [
    { propertyName: 'mode', label: 'Mode' },
    { propertyName: 'password', label: 'Password', inputType: 'Password' },
  ],
  ...over,
});

const TOY = `
let metadataCalls = 0;
const wait = (ms, signal) => new Promise((resolve) => { const t = setTimeout(resolve, ms); signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }); });
globalThis.__toySeen = { aborted: false };
function connErr(reason, message) { return Object.assign(new Error(message), { name: 'ConnectorError', reason, nativeCode: 'X1' }); }
export default {
  async preconnect(props) { return { reply: 'SUCCESS' }; },
  async connect(props, ctx) {
    const mode = props.mode ?? 'ok';
    ctx.log.info({ props }, 'connecting');
    if (mode === 'connectThrows') throw new Error('cannot connect with ' + props.password);
    if (mode === 'connectAuth') throw connErr('AuthFailed', 'password refused');
    return {
      async test(ctx) {
        if (mode === 'throwSync') { throw new TypeError('boom in test'); }
        if (mode === 'reject') return Promise.reject(new Error('rejected in test'));
        if (mode === 'hang') { await new Promise(() => {}); }
        if (mode === 'hangPolite') { await wait(60000, ctx.signal); globalThis.__toySeen.aborted = ctx.signal.aborted; }
        if (mode === 'nonError') throw 'a string';
      },
      async metadata() { metadataCalls++; return { entities: [{ fullName: 'things', name: 'things', fields: [], actions: [], relationships: [], calls: metadataCalls }], actions: [] }; },
      query(entity, filter, options, ctx) {
        if (mode === 'queryNotIterable') return 42;
        return (async function* () {
          for (let i = 0; i < 3; i++) {
            if (mode === 'queryThrows' && i === 1) throw new Error('disk on fire');
            if (mode === 'queryHangs' && i === 1) await new Promise(() => {});
            const size = mode === 'queryTooBig' ? options.batchSize + 1 : options.batchSize;
            yield Array.from({ length: size }, (_, k) => ({ n: i * size + k }));
          }
        })();
      },
      async write(action, entity, batch, options, ctx) {
        ctx.progress({ records: batch.length });
        if (mode === 'writeShort') return batch.slice(1).map(() => ({ ok: true, affected: 1 }));
        if (mode === 'writeJunk') return batch.map(() => 'yes');
        return batch.map((r) => (r.bad ? { ok: false, error: { code: 'InvalidValue', message: 'bad' } } : { ok: true, affected: 1, key: { size: batch.length } }));
      },
      async disconnect() { if (mode === 'disconnectThrows') throw new Error('cannot disconnect'); },
    };
  },
};
`;

let root: string;
let host: ConnectorHost;
const lines: string[] = [];

async function plugin(folder: string, man: unknown, code: string | undefined): Promise<void> {
  const dir = path.join(root, folder);
  await fsp.mkdir(dir, { recursive: true });
  if (man !== undefined)
    await fsp.writeFile(path.join(dir, 'manifest.json'), typeof man === 'string' ? man : JSON.stringify(man));
  if (code !== undefined) await fsp.writeFile(path.join(dir, 'index.mjs'), code);
}

const open = (mode: string, extra: Record<string, string> = {}) =>
  host.open({ connectorId: 'Toy', connectionId: `c-${mode}`, properties: { mode, password: 'S3cret-pw', ...extra } });

beforeAll(async () => {
  root = await fsp.mkdtemp(path.join(os.tmpdir(), 'ferry-host-'));
  await plugin('toy', manifest(), TOY);
  await plugin('bad-json', '{ "id": ', undefined);
  await plugin('bad-schema', manifest({ id: 'not-a-guid', solutionRoles: [], extra: true }), TOY);
  await plugin('no-manifest', undefined, TOY);
  await plugin(
    'throws-on-load',
    manifest({ id: '21111111-2222-4333-8444-555555555555', name: 'Thrower' }),
    `throw new Error('exploded while loading');`,
  );
  await plugin(
    'syntax-error',
    manifest({ id: '31111111-2222-4333-8444-555555555555', name: 'Broken' }),
    `export default {{{`,
  );
  await plugin(
    'no-export',
    manifest({ id: '41111111-2222-4333-8444-555555555555', name: 'Empty' }),
    `export const x = 1;`,
  );
  await plugin(
    'future-sdk',
    manifest({ id: '51111111-2222-4333-8444-555555555555', name: 'Future', sdkVersion: '^2.0.0' }),
    TOY,
  );
  await plugin(
    'old-agent',
    manifest({ id: '61111111-2222-4333-8444-555555555555', name: 'OldAgent', agentVersion: '<0.1.0' }),
    TOY,
  );
  await plugin('twin', manifest({ name: 'Twin' }), TOY);
  await plugin(
    'missing-module',
    manifest({ id: '71111111-2222-4333-8444-555555555555', name: 'NoModule', main: 'gone.js' }),
    undefined,
  );
  await plugin(
    'slow-load',
    manifest({ id: '81111111-2222-4333-8444-555555555555', name: 'Slow' }),
    `await new Promise(() => {}); export default {};`,
  );
  const sink = new Writable({ write: (chunk: Buffer, _enc, cb) => (lines.push(chunk.toString()), cb()) });
  host = new ConnectorHost({
    dir: root,
    log: pino({ level: 'debug' }, sink),
    agentVersion: '0.1.0',
    loadTimeoutMs: 500,
  });
});

afterAll(async () => {
  await host.close();
  await fsp.rm(root, { recursive: true, force: true });
});

describe('loading plugins', () => {
  it('loads the good plugin and reports every bad folder with its code, without throwing', async () => {
    const report = await host.loadAll();
    expect(report.loaded.map((l) => l.manifest.name)).toEqual(['Toy']);
    const byFolder = Object.fromEntries(report.failed.map((f) => [path.basename(f.folder), f.error.code]));
    expect(byFolder).toEqual({
      'bad-json': 'CON_MANIFEST_INVALID',
      'bad-schema': 'CON_MANIFEST_INVALID',
      'no-manifest': 'CON_MANIFEST_INVALID',
      'throws-on-load': 'CON_LOAD_FAILED',
      'syntax-error': 'CON_LOAD_FAILED',
      'no-export': 'CON_LOAD_FAILED',
      'future-sdk': 'CON_VERSION_UNSUPPORTED',
      'old-agent': 'CON_VERSION_UNSUPPORTED',
      twin: 'CON_DUPLICATE',
      'missing-module': 'CON_LOAD_FAILED',
      'slow-load': 'CON_LOAD_FAILED',
    });
    const schemaErrors = report.failed.find((f) => f.folder.endsWith('bad-schema'))?.error.errors?.map((e) => e.path);
    expect(schemaErrors).toEqual(expect.arrayContaining(['id', 'solutionRoles']));
    expect(report.failed.find((f) => f.folder.endsWith('throws-on-load'))?.error.message).toContain(
      'exploded while loading',
    );
  });

  it('answers calls to a plugin that failed to load with CON_UNAVAILABLE, and to an unknown one with CON_NOT_FOUND', async () => {
    await expect(host.open({ connectorId: 'Thrower', connectionId: 'x', properties: {} })).rejects.toMatchObject({
      code: 'CON_UNAVAILABLE',
    });
    await expect(host.open({ connectorId: 'Nobody', connectionId: 'x', properties: {} })).rejects.toMatchObject({
      code: 'CON_NOT_FOUND',
    });
    expect(host.manifest('11111111-2222-4333-8444-555555555555').name).toBe('Toy');
    expect(host.manifest('toy').bulkLimit).toBe(5);
  });

  it('validates manifests with defaults and refuses unknown keys', () => {
    const m = ConnectorManifest.parse({ ...manifest(), main: undefined, bulkLimit: undefined });
    expect(m.main).toBe('index.js');
    expect(m.bulkLimit).toBe(2000);
    expect(ConnectorManifest.safeParse({ ...manifest(), colour: 'red' }).success).toBe(false);
    expect(ConnectorManifest.safeParse({ ...manifest(), main: '../escape.js' }).success).toBe(false);
    expect(
      ConnectorManifest.safeParse({
        ...manifest(),
        uiDecorations: [{ propertyName: 'a', label: 'A', inputType: 'PickList' }],
      }).success,
    ).toBe(false);
  });
});

describe('calls into a plugin', () => {
  it('turns a synchronous throw, a rejection and a thrown non-Error into CON_PLUGIN_FAILED', async () => {
    for (const mode of ['throwSync', 'reject', 'nonError']) {
      const c = await open(mode);
      await expect(c.test()).rejects.toMatchObject({
        code: 'CON_PLUGIN_FAILED',
        kind: 'system',
        details: { connector: 'Toy', verb: 'test', connectionId: `c-${mode}` },
      });
      await c.close();
    }
  });

  it("maps a plugin's ConnectorError reason to its code and keeps the native code", async () => {
    await expect(open('connectAuth')).rejects.toMatchObject({
      code: 'CON_AUTH_FAILED',
      kind: 'config',
      details: { nativeCode: 'X1' },
    });
  });

  it('fails a hanging call with CON_TIMEOUT after its time-out, and tells a polite plugin through its signal', async () => {
    const c = await open('hang');
    const started = Date.now();
    await expect(c.test({ timeoutMs: 100 })).rejects.toMatchObject({ code: 'CON_TIMEOUT', kind: 'transient' });
    expect(Date.now() - started).toBeLessThan(2000);
    const polite = await open('hangPolite');
    await expect(polite.test({ timeoutMs: 50 })).rejects.toMatchObject({ code: 'CON_TIMEOUT' });
    const seen = (): boolean => (globalThis as { __toySeen?: { aborted: boolean } }).__toySeen?.aborted ?? false;
    await expect.poll(seen, { timeout: 2000 }).toBe(true);
  });

  it('fails a hanging call with CON_ABORTED as soon as the caller aborts', async () => {
    const c = await open('hang');
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    await expect(c.test({ signal: ac.signal })).rejects.toMatchObject({ code: 'CON_ABORTED' });
    const already = new AbortController();
    already.abort();
    await expect(c.test({ signal: already.signal })).rejects.toMatchObject({ code: 'CON_ABORTED' });
  });

  it('contains a query stream that throws or hangs mid-way, after the batches it did yield', async () => {
    const c = await open('queryThrows');
    const got: number[] = [];
    await expect(
      (async () => {
        for await (const b of c.query('things', undefined, { batchSize: 2 })) got.push(b.length);
      })(),
    ).rejects.toMatchObject({ code: 'CON_PLUGIN_FAILED', details: { verb: 'query' } });
    expect(got).toEqual([2]);
    const h = await open('queryHangs');
    const it = h.query('things', undefined, { batchSize: 2, timeoutMs: 100 })[Symbol.asyncIterator]();
    expect((await it.next()).value).toHaveLength(2);
    await expect(it.next()).rejects.toMatchObject({ code: 'CON_TIMEOUT' });
  });

  it('enforces the contract: batch sizes, iterables, one result per record', async () => {
    const big = await open('queryTooBig');
    await expect(
      (async () => {
        for await (const _ of big.query('things', undefined, { batchSize: 2 })) void _;
      })(),
    ).rejects.toMatchObject({ code: 'CON_PROTOCOL_VIOLATION' });
    const notIterable = await open('queryNotIterable');
    await expect(
      (async () => {
        for await (const _ of notIterable.query('things')) void _;
      })(),
    ).rejects.toMatchObject({ code: 'CON_PROTOCOL_VIOLATION' });
    const short = await open('writeShort');
    await expect(short.write('Create', 'things', [{ a: 1 }, { a: 2 }])).rejects.toMatchObject({
      code: 'CON_PROTOCOL_VIOLATION',
    });
    const junk = await open('writeJunk');
    await expect(junk.write('Create', 'things', [{ a: 1 }])).rejects.toMatchObject({ code: 'CON_PROTOCOL_VIOLATION' });
  });

  it('caps batches at the bulk limit: a query batch size above it is lowered, a larger write is split and results stay in order', async () => {
    const c = await open('ok');
    const sizes: number[] = [];
    for await (const b of c.query('things', undefined, { batchSize: 50 })) sizes.push(b.length);
    expect(sizes).toEqual([5, 5, 5]);
    const progress: number[] = [];
    const records = Array.from({ length: 12 }, (_, i) => ({ i, bad: i === 7 }));
    const res = await c.write('Create', 'things', records, { onProgress: (p) => progress.push(p.records ?? 0) });
    expect(res.map((r) => (r.ok ? (r.key?.['size'] as number) : 'bad'))).toEqual([
      5,
      5,
      5,
      5,
      5,
      5,
      5,
      'bad',
      5,
      5,
      2,
      2,
    ]);
    expect(progress).toEqual([5, 5, 2]);
    await expect(c.write('Explode' as never, 'things', [])).rejects.toMatchObject({ code: 'CON_UNSUPPORTED' });
  });

  it('caches metadata per connection, reloads on request, and when the properties change', async () => {
    const a = await open('ok');
    const first = await a.metadata();
    expect(await a.metadata()).toBe(first);
    const reloaded = await a.metadata({ reload: true });
    expect(reloaded).not.toBe(first);
    expect(host.metadataCache.loadedAt('c-ok')).toBeInstanceOf(Date);
    const b = await host.open({
      connectorId: 'Toy',
      connectionId: 'c-ok',
      properties: { mode: 'ok', password: 'changed' },
    });
    expect(await b.metadata()).not.toBe(reloaded);
    host.reloadMetadata('c-ok');
    expect(host.metadataCache.loadedAt('c-ok')).toBeUndefined();
  });

  it('refuses calls on a closed connection and survives a failing disconnect', async () => {
    const c = await open('disconnectThrows');
    await expect(c.close()).resolves.toBeUndefined();
    await expect(c.test()).rejects.toMatchObject({ code: 'CON_CLOSED' });
  });

  it('keeps protected properties out of error messages and logs', async () => {
    const err = (await open('connectThrows').catch((e: unknown) => e)) as { code: string; message: string };
    expect(err.code).toBe('CON_PLUGIN_FAILED');
    expect(err.message).toContain('[redacted]');
    expect(err.message).not.toContain('S3cret-pw');
    const log = lines.join('');
    expect(log).toContain('connecting');
    expect(log).not.toContain('S3cret-pw');
  });

  it("logs a connection opened for a run under the run's logger (its solutionId and runId), still redacted", async () => {
    const runLines: string[] = [];
    const runLog = pino(
      { level: 'debug' },
      new Writable({ write: (chunk: Buffer, _enc, cb) => (runLines.push(chunk.toString()), cb()) }),
    ).child({ solutionId: 's-1', runId: 'r-1' });
    const c = await host.open({
      connectorId: 'Toy',
      connectionId: 'c-run',
      properties: { mode: 'ok', password: 'S3cret-pw' },
      log: runLog,
    });
    await c.test();
    await c.close();
    const entries = runLines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(entries.find((e) => e['msg'] === 'connecting')).toMatchObject({
      solutionId: 's-1',
      runId: 'r-1',
      connector: 'Toy',
      connectionId: 'c-run',
    });
    expect(runLines.join('')).not.toContain('S3cret-pw');
    expect(lines.join('')).not.toContain('c-run');
  });

  it('runs preconnect, or answers SUCCESS for plugins without one', async () => {
    expect(await host.preconnect('Toy', { mode: 'ok' })).toEqual({ reply: 'SUCCESS' });
  });
});
