import {
  coerceValue,
  ConnectorError,
  failed,
  INVALID,
  OK_ONE,
  succeeded,
  throwIfAborted,
  type CallContext,
  type ConnectorRecord,
  type WriteAction,
  type WriteOptions,
  type WriteResult,
} from '../../src/connectors/sdk.js';
import type { EntityDef, WriteOp } from './definition.js';
import type { HttpClient, HttpResponse } from './client.js';
import { recordBody, toJson, type Body } from './body.js';
import { apiMessage, refused } from './errors.js';
import { getPath } from './json-path.js';

/**
 * Writes as the definition declares them: one request per record (the key in the path template,
 * `/items/{id}`), or one request per `batch.maxSize` records where the API takes an array.
 *
 *   Create  create          Update  update          Upsert  upsert          Delete  delete
 *   UpdateInsert  update per record; a 404 sends the record to create
 *
 * Results are one per record, in input order. A record the API refuses (a 4xx other than 401,
 * 403, 408 and 429) fails alone: InvalidValue for 400/422, NotFound for 404/410, DuplicateKey for
 * 409, else DatastoreError; the message has the request, the status and the API's own message, the
 * status is the nativeCode. A batch request's records take their results from the answer when it
 * has one per record (`resultsPath`, each with its status at `statusPath`); otherwise they all
 * share the request's outcome. Whatever fails the connection (client.ts) is thrown for the whole
 * call, never a record error: the records sent before it stand (per-record requests are not one
 * transaction), which Upsert, Update and Delete bear and a Create written again reports as 409.
 */

interface Prepared {
  index: number;
  body: Body;
  /** The record's key values, for a path template and for a keyed batch. */
  path: string;
}

const OP_NAMES: Record<WriteAction, Array<'create' | 'update' | 'upsert' | 'delete'>> = {
  Create: ['create'],
  Update: ['update'],
  Upsert: ['upsert'],
  Delete: ['delete'],
  UpdateInsert: ['update', 'create'],
};

/** Whether the entity's definition supports a write action (metadata lists only those). */
export function supports(entity: EntityDef, action: WriteAction): boolean {
  if (action === 'UpdateInsert') return Boolean(entity.update && !entity.update.batch && entity.create);
  return Boolean(entity[OP_NAMES[action][0] as 'create']);
}

export async function writeRecords(
  client: HttpClient,
  entity: EntityDef,
  action: WriteAction,
  batch: readonly ConnectorRecord[],
  options: WriteOptions,
  ctx: CallContext,
): Promise<WriteResult[]> {
  if (options.checkpoint)
    throw new ConnectorError('Unsupported', 'An HTTP API keeps no checkpoints with the records it is sent.');
  if (!supports(entity, action))
    throw new ConnectorError(
      'Unsupported',
      `The definition of ${entity.name} declares no request for ${action} (${OP_NAMES[action].join(' and ')}).`,
    );
  const op = entity[OP_NAMES[action][0] as 'create'] as WriteOp;
  const keys = keyFields(entity, action, op, options);
  const results: Array<WriteResult | undefined> = new Array<WriteResult | undefined>(batch.length);
  const ready: Prepared[] = [];
  batch.forEach((rec, index) => {
    const p = prepare(entity, action, op, keys, rec, index);
    if ('error' in p) results[index] = p.error;
    else ready.push(p);
  });
  const w = new Writer(client, entity, ctx);
  if (op.batch) {
    for (let i = 0; i < ready.length; i += op.batch.maxSize) {
      const chunk = ready.slice(i, i + op.batch.maxSize);
      const res = await w.sendBatch(op, chunk);
      chunk.forEach((p, j) => (results[p.index] = res[j]));
      ctx.progress({ records: Math.min(i + op.batch.maxSize, ready.length) });
    }
  } else await sendEach(w, entity, action, op, ready, results, client.concurrency, ctx);
  return results.map((r) => r ?? failed('DatastoreError', 'The record was not written.'));
}

/**
 * Per-record requests, up to `concurrency` at once: the records go into lanes by their request path
 * (a keyed write's path names its record; a Create's is shared, so Creates spread by position), each
 * lane sent in order, one request after the other. Two records for one key are therefore never in
 * flight together and arrive in input order. The first call-level failure stops every lane before
 * its next request and fails the call once they have all stopped; what was sent before stands.
 */
async function sendEach(
  w: Writer,
  entity: EntityDef,
  action: WriteAction,
  op: WriteOp,
  ready: readonly Prepared[],
  results: Array<WriteResult | undefined>,
  concurrency: number,
  ctx: CallContext,
): Promise<void> {
  const lanes: Prepared[][] = Array.from({ length: Math.max(1, Math.min(concurrency, ready.length)) }, () => []);
  ready.forEach((p, i) => {
    let h = 0;
    if (action === 'Create') h = i;
    else for (let k = 0; k < p.path.length; k++) h = (Math.imul(h, 31) + p.path.charCodeAt(k)) >>> 0;
    (lanes[h % lanes.length] as Prepared[]).push(p);
  });
  let failure: { err: unknown } | undefined;
  let done = 0;
  const lane = async (items: Prepared[]): Promise<void> => {
    for (const p of items) {
      if (failure) return;
      try {
        let r = await w.sendOne(op, p, action === 'Create');
        if (action === 'UpdateInsert' && !r.ok && r.error.code === 'NotFound' && entity.create) {
          const create = entity.create;
          r = create.batch
            ? ((await w.sendBatch(create, [{ ...p, path: create.path }]))[0] as WriteResult)
            : await w.sendOne(create, { ...p, path: fill(create.path, create, p.body, entity) }, true);
        }
        results[p.index] = r;
      } catch (err) {
        failure ??= { err };
        return;
      }
      if (++done % 100 === 0) ctx.progress({ records: done });
    }
  };
  await Promise.all(lanes.map(lane));
  if (failure) throw failure.err;
}

/** The fields a keyed write finds its records by: the path template's, which lookup fields may only repeat. */
function keyFields(entity: EntityDef, action: WriteAction, op: WriteOp, options: WriteOptions): string[] {
  if (action === 'Create') return [];
  const declared = op.placeholders.length > 0 ? op.placeholders : entity.key;
  const asked = options.keyFields;
  for (const k of asked ?? [])
    if (!entity.byName.has(k))
      throw new ConnectorError('FieldNotFound', `The entity ${entity.fullName} has no field ${k}.`);
  if (asked && (asked.length !== declared.length || asked.some((k) => !declared.includes(k))))
    throw new ConnectorError(
      'Unsupported',
      `The API finds records of ${entity.name} by ${declared.join(', ') || 'no key'} only, not by ${asked.join(', ')}.`,
    );
  if (declared.length === 0)
    throw new ConnectorError('Unsupported', `${action} on ${entity.name} needs key fields: declare the entity's key.`);
  return declared;
}

function prepare(
  entity: EntityDef,
  action: WriteAction,
  op: WriteOp,
  keys: readonly string[],
  rec: ConnectorRecord,
  index: number,
): Prepared | { error: WriteResult } {
  const made = recordBody(entity, rec);
  if ('error' in made) return { error: { ok: false, error: made.error } };
  for (const k of keys) {
    const v = rec[k];
    if (v === null || v === undefined || v === '')
      return { error: failed('MissingKey', `${action} needs a value for the key field ${k}.`, { field: k }) };
  }
  let body = made.body;
  // A batch Delete sends the records' keys only.
  if (action === 'Delete' && op.batch) {
    const onlyKeys: ConnectorRecord = {};
    for (const k of keys) onlyKeys[k] = rec[k] as ConnectorRecord[string];
    const keyBody = recordBody(entity, onlyKeys);
    if ('body' in keyBody) body = keyBody.body;
  }
  return { index, body, path: op.batch ? op.path : fill(op.path, op, rec, entity) };
}

/** The path template with the record's values, URL-encoded. */
function fill(template: string, op: WriteOp, rec: Readonly<Record<string, unknown>>, entity: EntityDef): string {
  let i = 0;
  return template.replace(/\{[^{}]*\}/g, () => {
    const name = op.placeholders[i++] as string;
    const f = entity.byName.get(name);
    const raw = rec[name] ?? (f ? getPath(rec, f.path) : undefined);
    const v = f && raw !== undefined ? coerceValue(f.type, raw) : raw;
    return encodeURIComponent(
      typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? String(v) : '',
    );
  });
}

class Writer {
  constructor(
    private readonly client: HttpClient,
    private readonly entity: EntityDef,
    private readonly ctx: CallContext,
  ) {}

  private async send(op: WriteOp, path: string, payload: unknown): Promise<{ res: HttpResponse; what: string }> {
    throwIfAborted(this.ctx.signal);
    const url = this.client.resolve(path);
    const what = this.client.describe(op.method, url);
    const withBody = op.method !== 'DELETE' || op.batch !== undefined;
    const body = op.wrap ? { [op.wrap]: payload } : payload;
    const res = await this.client.send(
      { method: op.method, url, ...(withBody ? { body: toJson(body) } : {}) },
      this.ctx,
    );
    return { res, what };
  }

  async sendOne(op: WriteOp, p: Prepared, create: boolean): Promise<WriteResult> {
    const { res, what } = await this.send(op, p.path, p.body);
    if (res.status >= 200 && res.status < 300) return create ? this.created(res) : OK_ONE;
    return refused(res.status, res.text, what);
  }

  /** A Create's answer may carry the key the API gave the record. */
  private created(res: HttpResponse): WriteResult {
    if (this.entity.key.length === 0 || !res.text) return OK_ONE;
    let doc: unknown;
    try {
      doc = JSON.parse(res.text);
    } catch {
      return OK_ONE;
    }
    const key: ConnectorRecord = {};
    for (const k of this.entity.key) {
      const f = this.entity.byName.get(k);
      const v = f ? coerceValue(f.type, getPath(doc, f.path)) : INVALID;
      if (v === INVALID || v === null) return OK_ONE;
      key[k] = v;
    }
    return succeeded(1, key);
  }

  async sendBatch(op: WriteOp, chunk: readonly Prepared[]): Promise<WriteResult[]> {
    const spec = op.batch;
    const { res, what } = await this.send(
      op,
      op.path,
      chunk.map((p) => p.body),
    );
    if (res.status < 200 || res.status >= 300) return chunk.map(() => refused(res.status, res.text, what));
    if (!spec?.resultsPath) return chunk.map(() => OK_ONE);
    let items: unknown;
    try {
      items = getPath(JSON.parse(res.text), spec.resultsPath);
    } catch {
      items = undefined;
    }
    if (!Array.isArray(items) || items.length !== chunk.length) {
      this.ctx.log.warn(
        { request: what, records: chunk.length, results: Array.isArray(items) ? items.length : null },
        'batch answer without one result per record: the request outcome stands for all',
      );
      return chunk.map(() => OK_ONE);
    }
    return items.map((item) => {
      const s = getPath(item, spec.statusPath);
      const status = typeof s === 'number' ? s : typeof s === 'string' && /^\d{3}$/.test(s) ? Number(s) : undefined;
      if (status !== undefined)
        return status >= 200 && status < 300 ? OK_ONE : refused(status, this.client.scrub(JSON.stringify(item)), what);
      const o = item as { error?: unknown; errors?: unknown } | null;
      if (o && typeof o === 'object' && (o.error || o.errors))
        return failed(
          'DatastoreError',
          `${what}: the API refused the record (${apiMessage(this.client.scrub(JSON.stringify(o)))}).`,
        );
      return OK_ONE;
    });
  }
}
