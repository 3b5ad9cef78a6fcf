/**
 * Upgrades a Map model of an older version to the current one (3.0). Pure: no I/O, no clock; the
 * Service's upgrade endpoint calls it and returns the result without saving.
 *
 * The original service's 2.5 export is a flat list of Blocks linked by `nextBlockId`,
 * `prevBlockId`, `parentBlockId` and `firstChildBlockId`. We rebuild the tree:
 *
 *   StartingBlockId ─next─▶ block ─next─▶ block …          top-level sequence
 *   If/Else ─firstChild─▶ container(then) ─next─▶ container(else)   each ─firstChild─▶ sequence
 *   For Each ─firstChild─▶ sequence (its body)
 *
 * Keys are matched case-insensitively (clients send PascalCase). Unknown Block kinds are kept
 * under the closest kind we know and reported by the validator, never dropped. Fetch reads its
 * `filterItems` as a filter like Query; Loop joins its `expressionItems` into its condition like
 * If/Else; a For Each Child's `relationship` (text or `{fullName}`) is kept.
 *
 * What real exports add: a `Group` Block is only a frame around a sequence of Blocks, so its
 * children take its place in the sequence; `Insert` (with `actionName: "Command"`) is a Create of
 * the command entity; a `comparisonOperator` may be a numeric code ({@link COMPARISON_CODES}) or a
 * name (`Equal`, `NotEqual`, …) instead of a symbol.
 */
import type { Filter, FilterValue } from '../../protocol/filter.js';
import {
  BLOCK_TYPES,
  DEFAULT_ACTION,
  MAP_MODEL_VERSION,
  MapModel,
  type BlockAction,
  type BlockType,
  type FieldMapping,
  type LookupCondition,
} from '../../protocol/map.js';
import { FerryError } from '../../errors/ferry-error.js';

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Lower-camel-cases every key, deeply (`StartingBlockId` → `startingBlockId`). */
function camel(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(camel);
  if (!isObj(v)) return v;
  const out: Obj = {};
  for (const [k, x] of Object.entries(v)) out[k.charAt(0).toLowerCase() + k.slice(1)] = camel(x);
  return out;
}

const str = (v: unknown): string | undefined =>
  typeof v === 'string' && v.length > 0 ? v : typeof v === 'number' ? String(v) : undefined;
const norm = (s: string): string => s.replace(/[^a-z0-9]/gi, '').toLowerCase();

const TYPE_ALIASES: Record<string, BlockType> = {
  ...Object.fromEntries(BLOCK_TYPES.map((t) => [norm(t), t])),
  insertupdate: 'Upsert',
  ifelse: 'IfElse',
  if: 'IfElse',
  foreach: 'ForEachResult',
  foreachresults: 'ForEachResult',
  exit: 'MapExit',
  native: 'NativeQuery',
  nativequeryblock: 'NativeQuery',
  wait: 'WaitForMessage',
  message: 'WaitForMessage',
  request: 'WaitForRequest',
  reply: 'SendReply',
  exitloop: 'LoopExit',
  while: 'Loop',
  foreachchildren: 'ForEachChild',
  insert: 'Create',
  execute: 'Create',
};

/**
 * The original's comparison operator codes, in its enumeration's order: Equal, NotEqual, Less,
 * LessOrEqual, Greater, GreaterOrEqual, IsNull, IsNotNull, Like, NotLike.
 */
export const COMPARISON_CODES = ['=', '<>', '<', '<=', '>', '>=', 'isnull', 'isnotnull', 'like', 'notlike'] as const;

const OPERATOR_NAMES: Record<string, string> = {
  equal: '=',
  equals: '=',
  equalto: '=',
  eq: '=',
  notequal: '<>',
  notequals: '<>',
  notequalto: '<>',
  ne: '<>',
  less: '<',
  lessthan: '<',
  lt: '<',
  lessorequal: '<=',
  lessthanorequal: '<=',
  lessthanorequalto: '<=',
  le: '<=',
  greater: '>',
  greaterthan: '>',
  gt: '>',
  greaterorequal: '>=',
  greaterthanorequal: '>=',
  greaterthanorequalto: '>=',
  ge: '>=',
  isnull: 'isnull',
  isnotnull: 'isnotnull',
  like: 'like',
  notlike: 'notlike',
  contains: 'contains',
  '!=': '<>',
  '==': '=',
};

/** A 2.5 comparison operator as a symbol (`=`, `<>`, …) or one of isnull, isnotnull, like, notlike, contains; `=` when absent. */
function operatorOf(v: unknown): string {
  const s = str(v)?.trim();
  if (s === undefined) return '=';
  if (/^\d+$/.test(s)) return COMPARISON_CODES[Number(s)] ?? s;
  if (['=', '<>', '<', '<=', '>', '>='].includes(s)) return s;
  return OPERATOR_NAMES[s.replace(/[\s_]/g, '').toLowerCase()] ?? s;
}

/** A `Group` Block: a frame whose children stand in its place. */
const isGroup = (b: Obj): boolean => norm(str(b['blockType']) ?? '') === 'group';

const ACTION_TYPES: Record<string, BlockType> = {
  create: 'Create',
  update: 'Update',
  updateinsert: 'UpdateInsert',
  insertupdate: 'Upsert',
  upsert: 'Upsert',
  delete: 'Delete',
  query: 'Query',
  nativequery: 'NativeQuery',
  createwith: 'CreateWith',
  updatewith: 'UpdateWith',
  insert: 'Create',
  command: 'Create',
};

function blockTypeOf(b: Obj): BlockType | 'Container' {
  const raw = norm(str(b['blockType']) ?? '');
  const category = norm(str(b['category']) ?? '');
  if (raw === 'container' || raw === 'then' || raw === 'else' || category === 'container') return 'Container';
  const byType = TYPE_ALIASES[raw];
  // Operation Blocks of 2.5 carry the kind in actionName (blockType is "Operation").
  const byAction = ACTION_TYPES[norm(str(b['actionName']) ?? '')];
  if (byType && !(raw === 'query' && byAction && byAction !== 'Query')) return byType;
  if (byAction) return byAction;
  throw new FerryError(
    'MAP_UPGRADE_FAILED',
    `The Block ${str(b['name']) ?? str(b['id']) ?? '?'} has an unknown blockType ${str(b['blockType']) ?? '(none)'}.`,
    { details: { blockId: str(b['id']) } },
  );
}

/** A 2.5 compare value as a filter literal: quoted text, a number, true/false/null, else the text as is. */
function literal(text: string): FilterValue {
  const t = text.trim();
  if (/^".*"$/s.test(t)) return t.slice(1, -1).replace(/""/g, '"');
  if (/^-?\d+(\.\d+)?$/.test(t)) return Number(t);
  if (/^(true|false)$/i.test(t)) return t.toLowerCase() === 'true';
  if (/^null$/i.test(t)) return null;
  return t;
}

function filterOf(items: Obj[]): Filter | undefined {
  const args: Filter[] = [];
  for (const it of items) {
    const field = str(it['fieldName']);
    if (!field) continue;
    const op = operatorOf(it['comparisonOperator']);
    const value = literal(str(it['compareValue']) ?? '');
    if (op === 'isnull' || op === 'isnotnull')
      args.push(op === 'isnull' ? { op: 'isNull', field } : { op: 'not', arg: { op: 'isNull', field } });
    else if (op === 'notlike') args.push({ op: 'not', arg: { op: 'like', field, pattern: String(value) } });
    else if (value === null && (op === '=' || op === '<>'))
      args.push(op === '=' ? { op: 'isNull', field } : { op: 'not', arg: { op: 'isNull', field } });
    else if (op === '=' || op === '<>' || op === '<' || op === '<=' || op === '>' || op === '>=')
      args.push({ op, field, value });
    else if (/^like$/i.test(op)) args.push({ op: 'like', field, pattern: String(value) });
    else if (/^contains$/i.test(op)) args.push({ op: 'contains', field, value: String(value) });
  }
  if (args.length === 0) return undefined;
  return args.length === 1 ? args[0] : { op: 'and', args };
}

/** If/Else expression items joined into one formula: `formula`, or `leftValue op rightValue`, joined by each item's logicalOperator (default AND). */
function conditionOf(items: Obj[]): string | undefined {
  let out = '';
  items.forEach((it, i) => {
    const left = str(it['leftValue']) ?? str(it['fieldName']) ?? 'null';
    const op = operatorOf(it['comparisonOperator']);
    const right = str(it['rightValue']) ?? str(it['compareValue']) ?? 'null';
    const f =
      str(it['formula']) ??
      str(it['expression']) ??
      (op === 'isnull' ? `ISNULL(${left})` : op === 'isnotnull' ? `NOT ISNULL(${left})` : [left, op, right].join(' '));
    if (i > 0) out += /^or$/i.test(str(items[i - 1]?.['logicalOperator']) ?? '') ? ' OR ' : ' AND ';
    out += `(${f})`;
  });
  return out || undefined;
}

const arr = (v: unknown): Obj[] => (Array.isArray(v) ? v.filter(isObj) : []);

/** Upgrades any supported older model (2.5 export) to 3.0; a 3.0 model is validated and returned. */
export function upgradeMap(input: unknown): MapModel {
  const m = camel(input);
  if (!isObj(m)) throw new FerryError('MAP_UPGRADE_FAILED', 'The Map model is not an object.');
  const version = str(m['version']) ?? str(m['modelVersion']) ?? '2.5';
  if (version === MAP_MODEL_VERSION) return parseModel(m);
  if (!/^2\.\d+$/.test(version))
    throw new FerryError(
      'MAP_UPGRADE_FAILED',
      `The Map model version ${version} cannot be upgraded (2.x and ${MAP_MODEL_VERSION} are supported).`,
      { details: { version } },
    );
  return parseModel(upgrade25(m));
}

/** Lists of a Block whose items are objects with optional fields; Block lists are walked as Blocks. */
const ITEM_LISTS = ['fieldMappings', 'lookupConditions', 'children'] as const;
const BLOCK_LISTS = ['then', 'else', 'body'] as const;

const dropNulls = (o: Obj): Obj => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null));

function blockWithoutNulls(b: unknown): unknown {
  if (!isObj(b)) return b;
  const out = dropNulls(b);
  for (const key of ITEM_LISTS) {
    const list = out[key];
    if (Array.isArray(list)) out[key] = list.map((item) => (isObj(item) ? dropNulls(item) : item));
  }
  for (const key of BLOCK_LISTS) {
    const list = out[key];
    if (Array.isArray(list)) out[key] = list.map(blockWithoutNulls);
  }
  return out;
}

/**
 * The model with its null fields taken as not sent: the Map answer shows what a model leaves out as
 * null (`batchSize`, `lastRunDate`), and clients built on .NET send every field they do not set as
 * null, so a model read and sent back must pass. Nulls inside a filter are left alone: there null
 * is a value to compare with.
 */
function withoutNulls(m: unknown): unknown {
  if (!isObj(m)) return m;
  const out = dropNulls(m);
  if (m['lastRunDate'] === null) out['lastRunDate'] = null;
  if (Array.isArray(out['blocks'])) out['blocks'] = out['blocks'].map(blockWithoutNulls);
  return out;
}

function parseModel(input: unknown): MapModel {
  const m = withoutNulls(input);
  const parsed = MapModel.safeParse(m);
  if (!parsed.success) {
    const errors = parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
    throw new FerryError(
      'MAP_MODEL_INVALID',
      `The Map model is not valid: ${errors.map((e) => `${e.path || '(root)'}: ${e.message}`).join('; ')}`,
      { errors },
    );
  }
  return parsed.data;
}

function upgrade25(m: Obj): Obj {
  const list = arr(m['blocks']);
  const byId = new Map<string, Obj>();
  for (const b of list) {
    const id = str(b['id']) ?? str(b['blockId']);
    if (id) byId.set(id.toLowerCase(), b);
  }
  const get = (id: unknown): Obj | undefined => {
    const s = str(id);
    return s ? byId.get(s.toLowerCase()) : undefined;
  };
  const seen = new Set<Obj>();
  const sequence = (first: Obj | undefined): Obj[] => {
    const out: Obj[] = [];
    for (let b = first; b && !seen.has(b); b = get(b['nextBlockId'])) {
      seen.add(b);
      if (isGroup(b)) out.push(...sequence(get(b['firstChildBlockId'])));
      else out.push(b);
    }
    return out;
  };
  const netChange = m['netChange'] === true;
  const netField = str(m['netChangeFieldName']);
  let starterDone = false;

  const convert = (b: Obj): Obj => {
    const type = blockTypeOf(b);
    if (type === 'Container')
      throw new FerryError('MAP_UPGRADE_FAILED', `The container ${str(b['name']) ?? ''} is outside an If/Else Block.`);
    const out: Obj = {
      blockId: str(b['id']) ?? str(b['blockId']),
      name: (str(b['name']) ?? str(b['label']) ?? type).slice(0, 50),
      blockType: type,
      action: actionOf(b, type),
    };
    const copy = (from: string, to = from): void => {
      const v = b[from];
      if (v !== undefined && v !== null && v !== '') out[to] = v;
    };
    copy('label');
    copy('operationName');
    copy('connectionId');
    copy('entity');
    copy('useBulk');
    copy('bulkCountPerOperation');
    copy('onErrorMessage');
    copy('nativeQuery', 'statement');
    copy('statement');
    copy('source');
    copy('cacheResults');
    copy('maxRecords');
    copy('maxIterations');
    copy('fields');
    const rel = b['relationship'] ?? b['relationshipName'];
    const relName = isObj(rel) ? (str(rel['fullName']) ?? str(rel['name'])) : str(rel);
    if (type === 'ForEachChild' && relName) out['relationship'] = relName;
    if ((type === 'Query' || type === 'Fetch') && !starterDone) {
      starterDone = true;
      const f = filterOf(arr(b['filterItems']));
      if (f) out['filter'] = f;
      if (netChange && netField && type === 'Query') out['netChange'] = { fieldName: netField };
      if (Array.isArray(b['relationships']))
        out['relationships'] = (b['relationships'] as unknown[])
          .map((r) => (isObj(r) ? (str(r['fullName']) ?? str(r['name'])) : str(r)))
          .filter(Boolean);
    } else if (Array.isArray(b['filterItems'])) {
      out['lookupConditions'] = arr(b['filterItems']).map((it): LookupCondition => {
        const op = operatorOf(it['comparisonOperator']);
        // IS NULL / IS NOT NULL compare with null; another operator a Lookup lacks is left for the model check to name.
        const nullTest = op === 'isnull' || op === 'isnotnull';
        return {
          fieldName: str(it['fieldName']) ?? '',
          comparisonOperator: (nullTest ? (op === 'isnull' ? '=' : '<>') : op) as LookupCondition['comparisonOperator'],
          compareValue: nullTest ? 'null' : (str(it['compareValue']) ?? 'null'),
        };
      });
    }
    if (Array.isArray(b['fieldMappings'])) {
      out['fieldMappings'] = arr(b['fieldMappings']).map((f): FieldMapping => {
        const dt = str(f['targetDataType']);
        return {
          targetField: str(f['targetField']) ?? '',
          ...(dt ? { targetDataType: dt } : {}),
          targetFormula: str(f['targetFormula']) ?? 'null',
        };
      });
    }
    if (type === 'Loop') {
      const cond = conditionOf(arr(b['expressionItems']));
      if (cond) out['condition'] = cond;
    }
    if (Array.isArray(b['children']) && (type === 'CreateWith' || type === 'UpdateWith')) {
      out['children'] = arr(b['children']).map((c) => ({
        relationship: str(c['relationship']) ?? str(c['relationshipName']) ?? '',
        source: str(c['source']) ?? '',
        ...(str(c['name']) ? { name: str(c['name']) } : {}),
        fieldMappings: arr(c['fieldMappings']).map((f) => ({
          targetField: str(f['targetField']) ?? '',
          targetFormula: str(f['targetFormula']) ?? 'null',
        })),
      }));
    }
    if (type === 'IfElse') {
      const cond = conditionOf(arr(b['expressionItems']));
      if (cond) out['condition'] = cond;
      const containers = sequence(get(b['firstChildBlockId']));
      out['then'] = sequence(get(containers[0]?.['firstChildBlockId'])).map(convert);
      out['else'] = sequence(get(containers[1]?.['firstChildBlockId'])).map(convert);
    } else if (str(b['firstChildBlockId'])) {
      out['body'] = sequence(get(b['firstChildBlockId'])).map(convert);
    }
    return out;
  };

  const start = get(m['startingBlockId']) ?? list.find((b) => !str(b['prevBlockId']) && !str(b['parentBlockId']));
  const blocks = sequence(start).map(convert);
  const out: Obj = { version: MAP_MODEL_VERSION, name: str(m['name']) ?? 'Upgraded Map', blocks };
  const mapId = m['mapId'] ?? m['id'];
  if (typeof mapId === 'number') out['mapId'] = mapId;
  if (str(m['description'])) out['description'] = m['description'];
  if (str(m['mapType'])) out['mapType'] = m['mapType'];
  if (str(m['lastRunDate'])) out['lastRunDate'] = m['lastRunDate'];
  return out;
}

function actionOf(b: Obj, type: BlockType): BlockAction {
  const a = str(b['actionName']) ?? str(b['action']);
  const known: Record<string, BlockAction> = {
    insert: 'Create',
    command: 'Create',
    none: 'None',
    create: 'Create',
    insertupdate: 'InsertUpdate',
    upsert: 'InsertUpdate',
    updateinsert: 'UpdateInsert',
    query: 'Query',
    update: 'Update',
    delete: 'Delete',
    nativequery: 'NativeQuery',
    createwith: 'CreateWith',
    updatewith: 'UpdateWith',
  };
  return (a ? known[norm(a)] : undefined) ?? DEFAULT_ACTION[type];
}
