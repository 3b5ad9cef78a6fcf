import type { Kysely } from 'kysely';
import { FerryError, invalid } from '../../src/errors/ferry-error.js';
import { Schedule, ScheduleRule } from '../../src/protocol/schedule.js';
import { ChangeCaptureSettings, DEFAULT_RETAINED_WAL_WARNING_MB } from '../../src/protocol/solutions.js';
import { compileSchedule, nextDue } from '../../src/solutions/schedule.js';
import { requireAgent, shownStatus } from '../agents/agents.js';
import { listAgents } from '../store/repos/agents.repo.js';
import { getConnection } from '../store/repos/connections.repo.js';
import { listMaps, updateMap } from '../store/repos/maps.repo.js';
import { recordMove } from '../store/repos/prepare.repo.js';
import {
  deleteSolution,
  getSolution,
  insertSolution,
  listSolutions,
  solutionNameTaken,
  updateSolution,
  type SolutionSortColumn,
} from '../store/repos/solutions.repo.js';
import type { AgentRow, Database, MapRow, OrgRow, SolutionRow, SolutionsTable } from '../store/schema.js';
import { isUniqueViolation } from '../store/sql.js';
import { newId, nowIso, toFlag } from '../util/values.js';
import { sharedConflict, sharedRoleOf, targetsOf } from './shared.js';
import { solutionStatus, type SolutionStatus, type SolutionType } from './status.js';

/** How a Replication Solution chooses the entities it copies. */
export const SELECTION_TYPES = ['Selected', 'Recommended', 'All'] as const;
export type SelectionType = (typeof SELECTION_TYPES)[number];

export interface ReplicationSettings {
  readonly selectionType: SelectionType;
  readonly entities: readonly string[];
  /** How changes are read; absent: net change (docs/change-capture.md). */
  readonly changeCapture?: ChangeCaptureSettings | undefined;
}

/** changeCapture as a client sends it: the method, the rest defaulted. */
export interface ChangeCaptureInput {
  readonly method: ChangeCaptureSettings['method'];
  readonly continuous?: boolean | null | undefined;
  readonly retainedWalWarningMb?: number | null | undefined;
}

/** A Map link as a client sends it back; only its Map ID and index count (the order). */
export interface MapLinkInput {
  readonly id?: number | null | undefined;
  readonly index?: number | null | undefined;
}

/**
 * A Solution as a client sends it (create and modify). Fields the Service owns (status, run
 * times, …) are not here: the schema accepts and drops them.
 */
export interface SolutionChange {
  readonly id?: string | null | undefined;
  readonly name: string;
  readonly description?: string | null | undefined;
  readonly solutionType: SolutionType;
  readonly agentId: string;
  readonly connectionIdForSource?: string | null | undefined;
  readonly connectionIdForTarget?: string | null | undefined;
  readonly replicationSettings?:
    | {
        selectionType: SelectionType;
        entities?: readonly string[] | null | undefined;
        changeCapture?: ChangeCaptureInput | null | undefined;
      }
    | null
    | undefined;
  readonly entities?: readonly string[] | null | undefined;
  readonly checkForBulk?: boolean | null | undefined;
  readonly isDisabled?: boolean | null | undefined;
  readonly mapLinks?: readonly MapLinkInput[] | null | undefined;
}

/** A Solution with the status and the next run time it is shown with (both derived when read). */
export interface SolutionView {
  readonly row: SolutionRow;
  readonly status: SolutionStatus;
  /** The next due time of its schedule after now (ISO), null when on demand or never due again. */
  readonly nextRunTime: string | null;
  /** Its Maps in run order (none for a Replication Solution). */
  readonly maps: readonly MapRow[];
}

/** A Solution's schedule as the API shows it: the model last set, or on demand. */
export interface ScheduleView {
  readonly solutionId: string;
  readonly model: Schedule;
}

/** The compiled schedule rule of a row; undefined when on demand (or an unreadable value). */
export function scheduleRuleOf(row: Pick<SolutionRow, 'scheduleRule'>): ScheduleRule | undefined {
  if (row.scheduleRule === null) return undefined;
  try {
    const parsed = ScheduleRule.safeParse(JSON.parse(row.scheduleRule));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** When the Solution's schedule is next due after `now`: derived from the rule, so never stale. */
export function nextRunTimeOf(row: Pick<SolutionRow, 'scheduleRule'>, now: Date = new Date()): string | null {
  const rule = scheduleRuleOf(row);
  return rule ? (nextDue(rule, now)?.toISOString() ?? null) : null;
}

/** The sorts of a list: DESIGN.md's names, and SPEC.md's Type, LastStartTime and NextStartTime for the same columns. */
export const SOLUTION_SORTS = [
  'Name',
  'SolutionType',
  'Type',
  'Status',
  'LastRunTime',
  'LastStartTime',
  'NextRunTime',
  'NextStartTime',
] as const;
export type SolutionSort = (typeof SOLUTION_SORTS)[number];

/** Sorts by what is derived when read (the status, the next run time from the schedule), done in memory. */
const DERIVED_SORTS: ReadonlySet<SolutionSort> = new Set(['Status', 'NextRunTime', 'NextStartTime']);

const SORT_COLUMN: Record<Exclude<SolutionSort, 'Status' | 'NextRunTime' | 'NextStartTime'>, SolutionSortColumn> = {
  Name: 'name',
  SolutionType: 'solutionType',
  Type: 'solutionType',
  LastRunTime: 'lastRunTime',
  LastStartTime: 'lastRunTime',
};

export interface SolutionListQuery {
  readonly solutionNameFilter?: string | undefined;
  readonly solutionType?: SolutionType | undefined;
  readonly solutionStatusFilter?: SolutionStatus | undefined;
  readonly sortName: SolutionSort;
  readonly sortOrder: 'asc' | 'desc';
  readonly limit: number;
  readonly offset: number;
}

export interface SolutionsOptions {
  readonly db: Kysely<Database>;
  /** Whether the Agent holds an open channel to this Service (the Agent status shown depends on it). */
  readonly isConnected: (agentId: string) => boolean;
  /**
   * Told after each change of a Solution: the Agents whose assignments may differ now (the old and
   * the new one), the Solution as stored (undefined once deleted), and whether what a run uses
   * changed (it is Incomplete until prepared again).
   */
  readonly changed?: (change: SolutionChangeEvent) => void;
}

export interface SolutionChangeEvent {
  readonly solution: SolutionRow | undefined;
  readonly agentIds: readonly string[];
  readonly definitionChanged: boolean;
}

export const solutionNotFound = (orgId: number, id: string): FerryError =>
  new FerryError('API_NOT_FOUND', `Solution ${id} was not found in Organization ${orgId}.`);

/** 400 API_VALIDATION naming one field of the body. */
const invalidField = (path: string, message: string, detail: string): FerryError =>
  invalid(detail, [{ path: `body.${path}`, message }]);

const nameTaken = (orgId: number, name: string): FerryError =>
  new FerryError('API_DUPLICATE_NAME', `Another Solution of Organization ${orgId} is named ${name}.`);

/** The stored replication settings of a row; null for the other types (or an unreadable value). */
export function replicationSettingsOf(row: Pick<SolutionRow, 'replicationSettings'>): ReplicationSettings | null {
  if (row.replicationSettings === null) return null;
  try {
    const v = JSON.parse(row.replicationSettings) as {
      selectionType?: unknown;
      entities?: unknown;
      changeCapture?: unknown;
    };
    const selectionType = SELECTION_TYPES.find((t) => t === v.selectionType);
    if (!selectionType) return null;
    const capture = ChangeCaptureSettings.safeParse(v.changeCapture);
    return {
      selectionType,
      entities: Array.isArray(v.entities) ? v.entities.filter((e): e is string => typeof e === 'string') : [],
      ...(capture.success && capture.data.method !== 'NetChange' ? { changeCapture: capture.data } : {}),
    };
  } catch {
    return null;
  }
}

/**
 * Solutions of an Organization (SPEC.md "Solution"): the definition of what runs, on which Agent,
 * between which Connections. A Solution is Incomplete after it is created or its definition
 * changes, until prepared.
 */
export class Solutions {
  constructor(private readonly opts: SolutionsOptions) {}

  private async view(row: SolutionRow, agent?: AgentRow): Promise<SolutionView> {
    const a = agent ?? (await requireAgent(this.opts.db, row.orgId, row.agentId));
    const nextRunTime = nextRunTimeOf(row);
    const maps = row.solutionType === 'Replication' ? [] : (await listMaps(this.opts.db, row.id)).rows;
    return {
      row,
      nextRunTime,
      maps,
      status: solutionStatus({ ...row, nextRunTime }, { status: shownStatus(a.status, this.opts.isConnected(a.id)) }),
    };
  }

  async require(orgId: number, id: string): Promise<SolutionRow> {
    const row = await getSolution(this.opts.db, orgId, id);
    if (!row) throw solutionNotFound(orgId, id);
    return row;
  }

  async get(orgId: number, id: string): Promise<SolutionView> {
    return this.view(await this.require(orgId, id));
  }

  /**
   * The Organization's Solutions, filtered, sorted and paged. Status is derived from each
   * Solution's Agent and the next run time from its schedule and the clock, so a status filter, a
   * status sort or a next-run sort reads every match and pages here; the others run in SQL.
   */
  async list(orgId: number, q: SolutionListQuery): Promise<{ items: SolutionView[]; total: number }> {
    const { db } = this.opts;
    const agents = new Map((await listAgents(db, orgId)).map((a) => [a.id, a]));
    const viewOf = (row: SolutionRow) => this.view(row, agents.get(row.agentId));
    const desc = q.sortOrder === 'desc';
    const filter = { nameContains: q.solutionNameFilter, solutionType: q.solutionType };
    const sqlSort = DERIVED_SORTS.has(q.sortName) ? undefined : SORT_COLUMN[q.sortName as keyof typeof SORT_COLUMN];
    if (sqlSort !== undefined && q.solutionStatusFilter === undefined) {
      const { rows, total } = await listSolutions(db, orgId, { ...filter, sort: { column: sqlSort, desc }, page: q });
      return { items: await Promise.all(rows.map(viewOf)), total };
    }
    const sort = sqlSort === undefined ? { column: 'name' as const, desc: false } : { column: sqlSort, desc };
    let items = await Promise.all((await listSolutions(db, orgId, { ...filter, sort })).rows.map(viewOf));
    if (q.solutionStatusFilter !== undefined) items = items.filter((v) => v.status === q.solutionStatusFilter);
    // Array sort is stable: within one status the Solutions stay by name.
    if (q.sortName === 'Status') items.sort((a, b) => (desc ? -1 : 1) * a.status.localeCompare(b.status, 'en'));
    // Solutions never due again come last either way, as missing run times do in SQL.
    if (q.sortName === 'NextRunTime' || q.sortName === 'NextStartTime')
      items.sort((a, b) => byTimeLast(a.nextRunTime, b.nextRunTime, desc));
    return { items: items.slice(q.offset, q.offset + q.limit), total: items.length };
  }

  /** Creates a Solution; it is Incomplete until prepared. `checkForBulk` of the query string, if given. */
  async create(org: OrgRow, input: SolutionChange, by: string, checkForBulk?: boolean): Promise<SolutionView> {
    const { db } = this.opts;
    const agent = await requireAgent(db, org.id, input.agentId.toLowerCase());
    const rs = input.solutionType === 'Replication';
    const { source, target } = await this.connections(org.id, input);
    const selection = selectionOf(input);
    if (rs && selection === undefined) {
      throw invalidField(
        'replicationSettings',
        'select the entities to replicate',
        'A Replication Solution needs its entities: send replicationSettings {selectionType: Selected, entities: [...]} (or All, or Recommended).',
      );
    }
    const links = input.mapLinks ?? [];
    if (links.length > 0) {
      throw invalidField(
        'mapLinks',
        'must be empty on create',
        'A new Solution has no Maps: create it with mapLinks [] and add Maps to it afterwards.',
      );
    }
    if (await solutionNameTaken(db, org.id, input.name)) throw nameTaken(org.id, input.name);
    const now = nowIso();
    const disabled = input.isDisabled === true;
    const row: SolutionsTable = {
      id: newId(),
      orgId: org.id,
      name: input.name,
      nameKey: input.name.toLowerCase(),
      description: input.description ?? '',
      solutionType: input.solutionType,
      agentId: agent.id,
      connectionIdForSource: source,
      connectionIdForTarget: target,
      replicationSettings: rs && selection ? storedSettings(selection, captureOf(input)) : null,
      checkForBulk: toFlag(rs && (input.checkForBulk ?? checkForBulk ?? false)),
      isDisabled: toFlag(disabled),
      reasonDisabled: disabled ? 1 : 0,
      prepared: 0,
      prepareState: null,
      lastRunTime: null,
      lastRunResult: null,
      inProgressStartTime: null,
      sharedFrom: null,
      minAgentVersion: null,
      schedule: null,
      scheduleRule: null,
      creationDate: now,
      lastModificationDate: now,
      modificationBy: by,
    };
    try {
      await insertSolution(db, row);
    } catch (err) {
      // Two creates of one name at once: the unique constraint lets one through.
      if (isUniqueViolation(err)) throw nameTaken(org.id, input.name);
      throw err;
    }
    this.opts.changed?.({ solution: row, agentIds: [], definitionChanged: true });
    return this.view(row, agent);
  }

  /**
   * Modifies a Solution. Its type cannot change; Map links may be sent back but not add or remove
   * Maps; changing a Replication Solution's source or target Connection needs a new entity
   * selection in the same body. A change to what a run uses (Agent, Connections, entities, bulk)
   * makes it Incomplete until prepared again; a new name, description or enabled state does not.
   */
  async update(
    org: OrgRow,
    id: string,
    input: SolutionChange,
    by: string,
    checkForBulk?: boolean,
  ): Promise<SolutionView> {
    const { db } = this.opts;
    const current = await this.require(org.id, id);
    if (input.id && input.id.toLowerCase() !== current.id) {
      throw invalidField(
        'id',
        `must be ${current.id}`,
        'The Solution ID in the body differs from the one in the path.',
      );
    }
    if (input.solutionType !== current.solutionType) {
      throw invalidField(
        'solutionType',
        `must stay ${current.solutionType}`,
        `The type of Solution ${current.name} is ${current.solutionType} and cannot change; create a new Solution instead.`,
      );
    }
    const agent = await requireAgent(db, org.id, input.agentId.toLowerCase());
    const rs = current.solutionType === 'Replication';
    const { source, target } = await this.connections(org.id, input);
    const connectionChanged = source !== current.connectionIdForSource || target !== current.connectionIdForTarget;
    const given = selectionOf(input, rs ? (replicationSettingsOf(current) ?? undefined) : undefined);
    if (rs && connectionChanged && given === undefined) {
      throw invalidField(
        'replicationSettings',
        'select the entities again when the source or target Connection changes',
        'The source or target Connection changes: select the entities to replicate again, sending replicationSettings (or entities) with the change.',
      );
    }
    const order = await this.mapOrder(current, input.mapLinks);
    if (input.name.toLowerCase() !== current.nameKey && (await solutionNameTaken(db, org.id, input.name, current.id)))
      throw nameTaken(org.id, input.name);

    const storedRs = replicationSettingsOf(current);
    const replicationSettings = rs
      ? storedSettings(given ?? storedRs, captureOf(input, storedRs?.changeCapture))
      : null;
    const bulk = toFlag(rs && (input.checkForBulk ?? checkForBulk ?? current.checkForBulk === 1));
    const disabled = input.isDisabled ?? current.isDisabled === 1;
    const reordered = order.wanted.some((mapId, i) => mapId !== order.current[i]);
    const definitionChanged =
      agent.id !== current.agentId ||
      connectionChanged ||
      replicationSettings !== current.replicationSettings ||
      bulk !== current.checkForBulk ||
      reordered;
    const described = (input.description ?? current.description) !== current.description;
    if ((definitionChanged || described || toFlag(disabled) !== current.isDisabled) && current.sharedFrom === null) {
      const role = await sharedRoleOf(db, current);
      if (role) throw sharedConflict(role, current.name, 'only its name may change, and it cannot be disabled');
    }
    try {
      await this.opts.db.transaction().execute(async (tx) => {
        if (reordered) for (const [i, mapId] of order.wanted.entries()) await updateMap(tx, mapId, { linkIndex: i });
        if (agent.id !== current.agentId) await recordMove(tx, current.id, current.agentId, agent.id, nowIso());
        const found = await updateSolution(tx, org.id, current.id, {
          name: input.name,
          nameKey: input.name.toLowerCase(),
          description: input.description ?? current.description,
          agentId: agent.id,
          connectionIdForSource: source,
          connectionIdForTarget: target,
          replicationSettings,
          checkForBulk: bulk,
          isDisabled: toFlag(disabled),
          reasonDisabled: disabled ? 1 : 0,
          prepared: definitionChanged ? 0 : current.prepared,
          ...(definitionChanged ? { prepareState: null } : {}),
          lastModificationDate: nowIso(),
          modificationBy: by,
        });
        if (!found) throw solutionNotFound(org.id, current.id);
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw nameTaken(org.id, input.name);
      throw err;
    }
    const stored = await this.require(org.id, current.id);
    this.opts.changed?.({
      solution: stored,
      agentIds: [...new Set([current.agentId, stored.agentId])],
      definitionChanged,
    });
    return this.view(stored, agent);
  }

  /**
   * The run order the body's Map links ask for (IDs by index; links without an index keep their
   * place in the list) beside the current one. Without mapLinks the order stays. The links must name
   * each of the Solution's Maps exactly once: a Solution's modify reorders its Maps but cannot add
   * or remove them (400 naming mapLinks).
   */
  private async mapOrder(
    current: SolutionRow,
    links: readonly MapLinkInput[] | null | undefined,
  ): Promise<{ wanted: number[]; current: number[] }> {
    const rows = current.solutionType === 'Replication' ? [] : (await listMaps(this.opts.db, current.id)).rows;
    const ids = rows.map((r) => r.id);
    if (links === null || links === undefined) return { wanted: ids, current: ids };
    const refuse = (message: string, detail: string): never => {
      throw invalidField(
        'mapLinks',
        message,
        `${detail} Modifying Solution ${current.name} reorders its Maps but cannot add or remove them.`,
      );
    };
    const seen = new Set<number>();
    for (const l of links) {
      if (l.id === null || l.id === undefined) refuse('every Map link needs its id', 'A Map link has no id.');
      else if (!ids.includes(l.id))
        refuse(`the Solution has no Map ${l.id}`, `Solution ${current.name} has no Map ${l.id}.`);
      else if (seen.has(l.id)) refuse(`Map ${l.id} is listed twice`, `Map ${l.id} is listed twice.`);
      else seen.add(l.id);
    }
    const missing = ids.filter((id) => !seen.has(id));
    if (missing.length > 0)
      refuse(`Maps ${missing.join(', ')} are missing`, `The Map links leave out Maps ${missing.join(', ')}.`);
    const wanted = links
      .map((l, pos) => ({ id: l.id ?? 0, key: l.index ?? pos, pos }))
      .sort((a, b) => a.key - b.key || a.pos - b.pos)
      .map((l) => l.id);
    return { wanted, current: ids };
  }

  /** The Solution's schedule: the model last set, or on demand when none was. */
  async schedule(orgId: number, id: string): Promise<ScheduleView> {
    const row = await this.require(orgId, id);
    return { solutionId: row.id, model: scheduleModelOf(row) };
  }

  /**
   * Sets the Solution's schedule (SPEC.md "PUT S/schedule"): the model is checked and compiled (its
   * time zone resolved), stored with its rule, and the next run time follows from it. The schedule
   * is not part of what prepare builds, so the Solution stays prepared. `checkForBulk` (the body's,
   * else the query's) sets a Replication Solution's bulk switch, which does make it Incomplete when
   * it changes.
   */
  async setSchedule(
    org: OrgRow,
    id: string,
    model: Schedule,
    by: string,
    checkForBulk?: boolean,
  ): Promise<ScheduleView> {
    const current = await this.require(org.id, id);
    const compiled = compileSchedule(model, 'body');
    if (!compiled.ok) {
      const [first] = compiled.errors;
      throw new FerryError(
        'API_VALIDATION',
        `The schedule is not valid: ${first ? `${first.path}: ${first.message}` : 'unknown error'}.`,
        { errors: compiled.errors },
      );
    }
    const onDemand = compiled.rule.kind === 'OnDemand';
    const stored: Schedule = { ...model, solutionId: current.id, checkForBulk: undefined };
    const bulkAsked = model.checkForBulk ?? checkForBulk;
    const bulk =
      current.solutionType === 'Replication' && bulkAsked !== undefined && bulkAsked !== null
        ? toFlag(bulkAsked)
        : current.checkForBulk;
    const rule = onDemand ? null : JSON.stringify(compiled.rule);
    const found = await updateSolution(this.opts.db, org.id, current.id, {
      schedule: onDemand ? null : JSON.stringify(stored),
      scheduleRule: rule,
      checkForBulk: bulk,
      prepared: bulk !== current.checkForBulk ? 0 : current.prepared,
      lastModificationDate: nowIso(),
      modificationBy: by,
    });
    if (!found) throw solutionNotFound(org.id, current.id);
    const after = await this.require(org.id, current.id);
    this.opts.changed?.({
      solution: after,
      agentIds: [current.agentId],
      definitionChanged: after.prepared !== current.prepared,
    });
    return {
      solutionId: current.id,
      model: scheduleModelOf({ id: current.id, schedule: onDemand ? null : JSON.stringify(stored) }),
    };
  }

  /** Deletes a Solution that is not running. */
  async delete(orgId: number, id: string): Promise<void> {
    const row = await this.require(orgId, id);
    if (row.inProgressStartTime !== null) {
      throw new FerryError(
        'API_CONFLICT',
        `Solution ${row.name} is running (since ${row.inProgressStartTime}); stop it or wait for the run to end, then delete it.`,
      );
    }
    const targets = await targetsOf(this.opts.db, row.id);
    if (targets.length > 0) {
      throw new FerryError(
        'API_IN_USE',
        `Solution ${row.name} is the source of ${targets.length} by-reference ${targets.length === 1 ? 'copy' : 'copies'} (in Organization ${[...new Set(targets.map((t) => t.orgId))].join(', ')}): delete ${targets.length === 1 ? 'it' : 'them'} first.`,
      );
    }
    if (!(await deleteSolution(this.opts.db, orgId, row.id))) throw solutionNotFound(orgId, row.id);
    this.opts.changed?.({ solution: undefined, agentIds: [row.agentId], definitionChanged: true });
  }

  /**
   * The source and target Connections: both required on a Replication Solution, distinct, and
   * Connections of the Organization (400 naming the field); the other types hold theirs in Maps.
   */
  private async connections(
    orgId: number,
    input: SolutionChange,
  ): Promise<{ source: string | null; target: string | null }> {
    const fields = ['connectionIdForSource', 'connectionIdForTarget'] as const;
    if (input.solutionType !== 'Replication') {
      for (const f of fields) {
        if (input[f])
          throw invalidField(
            f,
            'only Replication Solutions have one',
            `Only Replication Solutions name a source and a target Connection; a ${input.solutionType} Solution holds its Connections in its Maps.`,
          );
      }
      return { source: null, target: null };
    }
    const ids: string[] = [];
    for (const f of fields) {
      const value = input[f];
      if (!value) throw invalidField(f, 'required for a Replication Solution', `A Replication Solution needs ${f}.`);
      const conn = await getConnection(this.opts.db, orgId, value);
      if (!conn)
        throw invalidField(
          f,
          'no such Connection in this Organization',
          `Connection ${value} was not found in Organization ${orgId}.`,
        );
      ids.push(conn.id);
    }
    const [source = null, target = null] = ids;
    if (source === target) {
      throw invalidField(
        'connectionIdForTarget',
        'must differ from connectionIdForSource',
        'A Replication Solution copies from one Connection to another: choose a target Connection other than the source.',
      );
    }
    return { source, target };
  }
}

/** How the body says changes are read: its changeCapture (null: net change), else what is stored. */
function captureOf(input: SolutionChange, stored?: ChangeCaptureSettings): ChangeCaptureSettings | undefined {
  const given = input.replicationSettings?.changeCapture;
  if (given === undefined) return stored;
  if (given === null || given.method === 'NetChange') return undefined;
  return {
    method: given.method,
    continuous: given.continuous ?? false,
    retainedWalWarningMb: given.retainedWalWarningMb ?? DEFAULT_RETAINED_WAL_WARNING_MB,
  };
}

/** The stored replicationSettings: the selection, and the change capture when it is not net change. */
function storedSettings(selection: ReplicationSettings | null, capture: ChangeCaptureSettings | undefined): string {
  const { selectionType, entities } = selection ?? { selectionType: 'Selected', entities: [] };
  return JSON.stringify({ selectionType, entities, ...(capture ? { changeCapture: capture } : {}) });
}

/**
 * The entity selection a body makes, or undefined when it makes none: replicationSettings, or
 * SPEC.md's `entities` (Selected). When both are given and disagree, the copy the client changed
 * wins: a client that reads the model, edits one copy and sends the whole model back echoes the
 * other as `stored` holds it. Both changed (or nothing stored: a create) is a 400. Names are kept
 * once each, ignoring case; All and Recommended keep no names.
 */
function selectionOf(input: SolutionChange, stored?: ReplicationSettings): ReplicationSettings | undefined {
  let rs = input.replicationSettings ?? undefined;
  let plain = input.entities ?? undefined;
  if (
    input.solutionType === 'Replication' &&
    rs?.entities != null &&
    plain !== undefined &&
    stored !== undefined &&
    !sameNames(rs.entities, plain)
  ) {
    const plainAsStored = sameNames(plain, stored.entities);
    const rsAsStored = rs.selectionType === stored.selectionType && sameNames(rs.entities, stored.entities);
    if (plainAsStored && !rsAsStored) plain = undefined;
    else if (rsAsStored && !plainAsStored) rs = undefined;
  }
  if (input.solutionType !== 'Replication') {
    if (rs !== undefined)
      throw invalidField(
        'replicationSettings',
        'only Replication Solutions have them',
        `Only Replication Solutions select entities; a ${input.solutionType} Solution holds its entities in its Maps.`,
      );
    if (plain !== undefined && plain.length > 0)
      throw invalidField(
        'entities',
        'only Replication Solutions select entities',
        `Only Replication Solutions select entities; a ${input.solutionType} Solution holds its entities in its Maps.`,
      );
    return undefined;
  }
  if (rs === undefined && plain === undefined) return undefined;
  const listed = rs?.entities ?? undefined;
  if (listed !== undefined && plain !== undefined && !sameNames(listed, plain)) {
    throw invalidField(
      'entities',
      'differs from replicationSettings.entities',
      'entities and replicationSettings.entities name different entities, and neither is the stored selection: send one of them.',
    );
  }
  const selectionType = rs?.selectionType ?? 'Selected';
  if (selectionType !== 'Selected') return { selectionType, entities: [] };
  const entities = unique(listed ?? plain ?? []);
  if (entities.length === 0) {
    throw invalidField(
      rs ? 'replicationSettings.entities' : 'entities',
      'select at least one entity',
      'selectionType Selected needs at least one entity (or choose All or Recommended).',
    );
  }
  return { selectionType, entities };
}

function unique(names: readonly string[]): string[] {
  const seen = new Set<string>();
  return names.filter((n) => {
    const key = n.toLowerCase();
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function sameNames(a: readonly string[], b: readonly string[]): boolean {
  const x = new Set(a.map((n) => n.toLowerCase()));
  const y = new Set(b.map((n) => n.toLowerCase()));
  return x.size === y.size && [...x].every((n) => y.has(n));
}

/** The stored Schedule model of a row; on demand when none was set (or it is unreadable). */
function scheduleModelOf(row: Pick<SolutionRow, 'id' | 'schedule'>): Schedule {
  const onDemand: Schedule = {
    scheduleOption: 'OnDemand',
    solutionId: row.id,
    runOnceOptions: null,
    recurringOptions: null,
  };
  if (row.schedule === null) return onDemand;
  try {
    const parsed = Schedule.safeParse(JSON.parse(row.schedule));
    return parsed.success ? { ...parsed.data, solutionId: row.id } : onDemand;
  } catch {
    return onDemand;
  }
}

/** Compares ISO times, nulls last whatever the order. */
function byTimeLast(a: string | null, b: string | null, desc: boolean): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  return (desc ? -1 : 1) * (a < b ? -1 : 1);
}
