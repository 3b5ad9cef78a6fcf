import {
  compareValues,
  compileFilter,
  ConnectorError,
  throwIfAborted,
  coerceValue,
  INVALID,
  filterFields,
  type CallContext,
  type ConnectorRecord,
  type Filter,
  type OrderBy,
  type QueryOptions,
  type RecordBatch,
  type Value,
} from '../../src/connectors/sdk.js';
import type { EntityDef, FieldDef, NetChangeDef, PushdownDef } from './definition.js';
import type { HttpClient } from './client.js';
import { readPages } from './pagination.js';
import { recordReader } from './records.js';

/**
 * A query of an entity: its pages read one at a time (pagination.ts), each API object made a
 * record, the filter and the net change applied here, batches of at most `batchSize` yielded.
 *
 * - Filters the definition maps to query parameters (`filters`) are sent when they are conditions
 *   the whole filter needs (its top-level AND): the API sends fewer pages. The whole filter is
 *   still applied to every record, so an API that matches more loosely (case, prefixes) changes
 *   nothing. Everything else is evaluated here (compileFilter, SQL semantics).
 * - Net change: `since` goes in the definition's parameter when it has one, and records are kept
 *   only when their field is at or after it (null is no change). Unless the definition says the
 *   API returns them `ordered`, they are sorted here, ascending and stable.
 * - orderBy is applied here too. A sort holds the matching records in memory: with a limit only
 *   the best `limit` of them, else at most MAX_SORTED (more fails the query, Unsupported).
 */

/** The most records a query sorts in memory (net change without `ordered`, or orderBy without a limit). */
export const MAX_SORTED = 200_000;

export async function* queryEntity(
  client: HttpClient,
  entity: EntityDef,
  filter: Filter | undefined,
  options: QueryOptions,
  ctx: CallContext,
): AsyncGenerator<RecordBatch, void, undefined> {
  if (!entity.readPath) throw new ConnectorError('Unsupported', `The entity ${entity.name} has no read path.`);
  const field = (name: string): FieldDef => {
    const f = entity.byName.get(name);
    if (!f) throw new ConnectorError('FieldNotFound', `The entity ${entity.fullName} has no field ${name}.`);
    return f;
  };
  const selected = (options.fields ?? entity.fields.map((f) => f.fullName)).map(field);
  const net = options.netChange;
  const order: OrderBy[] = net ? [{ field: net.field, direction: 'asc' }] : (options.orderBy ?? []);
  const needed = new Set([
    ...selected.map((f) => f.fullName),
    ...filterFields(filter).map((n) => field(n).fullName),
    ...order.map((o) => field(o.field).fullName),
  ]);
  const toRecord = recordReader(
    entity.fields.filter((f) => needed.has(f.fullName)),
    entity.fullName,
    ctx,
  );
  const matches = compileFilter(
    filter,
    (n) => entity.byName.get(n)?.type,
    (n) => new ConnectorError('FieldNotFound', `The entity ${entity.fullName} has no field ${n}.`),
  );
  const since = net ? sinceFilter(entity, net.field, net.since) : undefined;
  const params = [...pushdown(entity.filters, filter), ...netChangeParams(entity.netChange, net?.since)];
  const sorted = order.length > 0 && !(net && entity.netChange?.ordered && entity.netChange.field === net.field);
  const project = selected.length === needed.size ? undefined : selected.map((f) => f.fullName);
  const limit = options.limit ?? Infinity;
  if (limit <= 0) return;
  const sorter = sorted ? new Sorter(entity, order, limit) : undefined;

  let out: ConnectorRecord[] = [];
  let count = 0;
  const pages = readPages(client, entity, params, ctx);
  try {
    let read = 0;
    for await (const page of pages) {
      throwIfAborted(ctx.signal);
      read += page.records.length;
      ctx.progress({ records: read });
      for (const raw of page.records) {
        const rec = toRecord(raw);
        if (!matches(rec) || (since && !since(rec))) continue;
        if (sorter) {
          sorter.add(rec);
          continue;
        }
        out.push(project ? pick(rec, project) : rec);
        if (++count >= limit) break;
        if (out.length >= options.batchSize) {
          yield out;
          out = [];
        }
      }
      if (count >= limit) break;
    }
  } catch (err) {
    // The records of the pages read before the failure are passed on first; the next pull fails.
    if (out.length > 0 && !sorter && !ctx.signal.aborted) yield out;
    throw err;
  }
  if (sorter) {
    for (const rec of sorter.result()) {
      out.push(project ? pick(rec, project) : rec);
      if (out.length >= options.batchSize) {
        yield out;
        out = [];
      }
    }
  }
  if (out.length > 0) yield out;
}

function pick(rec: ConnectorRecord, names: readonly string[]): ConnectorRecord {
  const out: ConnectorRecord = {};
  for (const n of names) out[n] = rec[n] ?? null;
  return out;
}

/** Records whose net-change field is at or after `since`; null is no change. */
function sinceFilter(entity: EntityDef, name: string, sinceText: string): (r: ConnectorRecord) => boolean {
  const f = entity.byName.get(name);
  if (!f) throw new ConnectorError('FieldNotFound', `The entity ${entity.fullName} has no field ${name}.`);
  if (f.type !== 'date' && f.type !== 'datetime')
    throw new ConnectorError('InvalidQuery', `Net change needs a date or datetime field; ${name} is a ${f.type}.`);
  const since = coerceValue(f.type, sinceText);
  if (since === INVALID || since === null)
    throw new ConnectorError('InvalidQuery', `The net-change date ${sinceText} is not a ${f.type}.`);
  return (r) => {
    const v = r[name];
    return v !== null && v !== undefined && compareValues(f.type, v, since) >= 0;
  };
}

/** The net-change date in the definition's parameter and format. */
function netChangeParams(def: NetChangeDef | undefined, since: string | undefined): Array<[string, string]> {
  if (!def?.param || since === undefined) return [];
  const ms = Date.parse(since.length === 10 ? `${since}T00:00:00Z` : since);
  if (Number.isNaN(ms)) throw new ConnectorError('InvalidQuery', `The net-change date ${since} is not a date.`);
  const iso = new Date(ms).toISOString();
  const value =
    def.format === 'date'
      ? iso.slice(0, 10)
      : def.format === 'unix'
        ? String(Math.floor(ms / 1000))
        : def.format === 'unixMs'
          ? String(ms)
          : iso;
  return [[def.param, value]];
}

/** Conditions of the filter's top-level AND that the definition maps to query parameters. */
function pushdown(defs: readonly PushdownDef[], filter: Filter | undefined): Array<[string, string]> {
  if (!filter || defs.length === 0) return [];
  const conjuncts = filter.op === 'and' ? filter.args : [filter];
  const out: Array<[string, string]> = [];
  for (const c of conjuncts) {
    if (c.op === 'in') {
      const d = defs.find((x) => x.field === c.field && x.op === 'in');
      const values = c.values.filter((v): v is Exclude<Value, null> => v !== null);
      if (d && values.length > 0) out.push([d.param, values.map(String).join(',')]);
    } else if (c.op === '=' || c.op === '<' || c.op === '<=' || c.op === '>' || c.op === '>=') {
      const d = defs.find((x) => x.field === c.field && x.op === c.op);
      if (d && c.value !== null) out.push([d.param, String(c.value)]);
    }
  }
  return out;
}

/** Sorts the records of a query: stable, nulls last; keeps only the first `limit` when there is one. */
class Sorter {
  private records: ConnectorRecord[] = [];
  private seq = 0;
  private readonly seqs = new WeakMap<ConnectorRecord, number>();
  private readonly compare: (a: ConnectorRecord, b: ConnectorRecord) => number;

  constructor(
    entity: EntityDef,
    order: readonly OrderBy[],
    private readonly limit: number,
  ) {
    const keys = order.map((o) => ({
      name: o.field,
      type: (entity.byName.get(o.field) as FieldDef).type,
      sign: o.direction === 'desc' ? -1 : 1,
    }));
    this.compare = (a, b) => {
      for (const k of keys) {
        const x = a[k.name] ?? null;
        const y = b[k.name] ?? null;
        if (x === null || y === null) {
          if (x !== y) return x === null ? 1 : -1;
          continue;
        }
        const c = compareValues(k.type, x, y);
        if (c !== 0) return c * k.sign;
      }
      return (this.seqs.get(a) ?? 0) - (this.seqs.get(b) ?? 0);
    };
  }

  add(rec: ConnectorRecord): void {
    this.seqs.set(rec, this.seq++);
    this.records.push(rec);
    if (this.limit !== Infinity && this.records.length >= Math.max(2 * this.limit, 1000)) this.trim();
    else if (this.records.length > MAX_SORTED)
      throw new ConnectorError(
        'Unsupported',
        `The query would sort more than ${MAX_SORTED} records in memory: give a limit, or declare the ` +
          `entity's netChange ordered when the API returns records ascending by it.`,
      );
  }

  private trim(): void {
    this.records.sort(this.compare);
    this.records.length = Math.min(this.records.length, this.limit);
  }

  result(): ConnectorRecord[] {
    this.trim();
    return this.records;
  }
}
