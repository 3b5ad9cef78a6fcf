/**
 * A Replication that reads its source's log (change capture; docs/change-capture.md) instead of
 * a net-change stamp: inserts, updates and deletes, in commit order, deletes included.
 *
 *   setup: the source's capture of the entities (a PostgreSQL slot + publication, named after the Solution)
 *   first run (the capture made anew, or an entity new to it): the entity's first copy, by the
 *       ordinary engine (replicate.ts), read after the capture's starting position
 *   then: changes from the saved position ─▶ per batch: compacted by key (the last change of a row
 *       wins) ─▶ target: Delete, then Upsert ─▶ position saved (the Agent's state file) ─▶ confirmed
 *       to the source, which may then drop its log up to it
 *   a run reads up to where the source was when it began, then ends; `continuous` reads until stopped
 *
 * Exactly once, across kills: the position moves only after the target has the batch, and every
 * write is by key with a row's final values, so a batch written again after a crash (its position
 * not saved yet) leaves the same rows: changes read twice are written over, none is lost, none doubles.
 * A copy that overlaps changes (it reads rows changed after the starting position) is corrected the
 * same way: those changes are applied again on top of it, in order, ending at each row's last state.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import type { HostConnection } from '../connectors/connection.js';
import type { CapturedChange, ConnectorRecord, EntityMetadata, WriteResult } from '../connectors/sdk.js';
import { isFerryError } from '../errors/ferry-error.js';
import { hms } from '../maps/runtime/stats.js';
import { DEFAULT_TARGET_RETRY, isTargetFailure } from '../maps/runtime/target-retry.js';
import { sourceKeyOf, type RunMapStats, type RunRecordError } from '../protocol/solutions.js';
import { randomUUID } from 'node:crypto';
import { replicate, type ReplicateOptions, type ReplicateResult } from './replicate.js';
import { FileReplicationState, type ReplicationStateStore } from './replication-state.js';

/** How a Replication Solution captures changes (replicationSettings.changeCapture). */
export interface ChangeCaptureSettings {
  /** Keep reading until stopped (else each run reads up to where the source was when it began). */
  readonly continuous: boolean;
  /** The source's log kept for the capture above which each run warns (bytes). */
  readonly retainedWarnBytes: number;
}

/** The capture's name in the source (slot and publication): after the Solution. */
export function captureName(solutionId: string): string {
  return `ferry_${solutionId.replace(/[^A-Za-z0-9]/g, '').toLowerCase()}`.slice(0, 63);
}

interface CaptureState {
  /** The capture the state belongs to (a capture made anew starts over). */
  name: string;
  /** Where the next run reads changes from. */
  position: string;
  /** Entities whose first copy is done. */
  copied: string[];
}

/** The capture's progress on the Agent: one small JSON file, replaced atomically. */
class CaptureStateFile {
  constructor(private readonly file: string) {}

  async load(name: string): Promise<CaptureState | undefined> {
    try {
      const s = JSON.parse(await fs.readFile(this.file, 'utf8')) as Partial<CaptureState>;
      if (s.name !== name || typeof s.position !== 'string' || !Array.isArray(s.copied)) return undefined;
      return { name, position: s.position, copied: s.copied.filter((e): e is string => typeof e === 'string') };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' || err instanceof SyntaxError) return undefined;
      throw err;
    }
  }

  async save(state: CaptureState): Promise<void> {
    await fs.mkdir(path.dirname(this.file), { recursive: true });
    const tmp = `${this.file}.${process.pid}.tmp`;
    const h = await fs.open(tmp, 'w');
    try {
      await h.writeFile(JSON.stringify(state) + '\n');
      await h.sync();
    } finally {
      await h.close();
    }
    await fs.rename(tmp, this.file);
  }
}

export interface CaptureOptions extends Omit<ReplicateOptions, 'state'> {
  /** The capture's name in the source (captureName). */
  name: string;
  settings: ChangeCaptureSettings;
  /** The Solution's folder on the Agent: the capture's position and its first copies' checkpoints. */
  stateDir: string;
  /** How long changes gather into one batch (default 200 ms). */
  maxWaitMs?: number;
}

export interface CaptureResult extends ReplicateResult {
  /** Bytes of log the source keeps for the capture at the run's end; undefined when it could not be read. */
  retainedBytes?: number;
}

/** One entity's changes in this run. */
interface EntityTally {
  stats: RunMapStats;
  dest: EntityMetadata;
  sourceKeys: string[];
  targetKeys: string[];
}

/** Runs a Replication by change capture; never throws for the datastores' failures (they are `fatal`). */
export async function replicateChanges(opts: CaptureOptions): Promise<CaptureResult> {
  const log = opts.log.child({ component: 'change-capture', capture: opts.name });
  const entities = [...new Set(opts.entities)];
  const stateFile = new CaptureStateFile(path.join(opts.stateDir, 'capture.json'));
  const copyDir = path.join(opts.stateDir, 'capture-copy');
  let statistics: RunMapStats[] = [];
  try {
    await opts.source.metadata({ reload: true, signal: opts.signal });
    const setup = await opts.source.setupChangeCapture(opts.name, entities, { signal: opts.signal });
    let state: CaptureState | undefined = await stateFile.load(opts.name);
    if (setup.created || state === undefined) {
      // A capture made anew (or its progress lost): every entity is copied again, from after its start.
      if (setup.created)
        log.info({ position: setup.position }, 'change capture created: entities get their first copy');
      await fs.rm(copyDir, { recursive: true, force: true });
      state = { name: opts.name, position: setup.position, copied: [] };
      await stateFile.save(state);
    }
    const copied = new Set(state.copied);
    const toCopy = entities.filter((e) => !copied.has(e));
    if (toCopy.length) {
      const copy = await firstCopies(opts, toCopy, new FileReplicationState(copyDir), log);
      statistics = copy.statistics;
      if (copy.fatal !== undefined || copy.cancelled) return { ...copy, statistics };
      state = { ...state, copied: [...state.copied, ...toCopy] };
      await stateFile.save(state);
    }
    const applied = await applyWithRetry(opts, stateFile, log);
    const result = merge(statistics, applied.stats, applied.cancelled);
    const retainedBytes = await retained(opts, log);
    return { ...result, ...(retainedBytes !== undefined ? { retainedBytes } : {}) };
  } catch (err) {
    const cancelled = opts.signal.aborted;
    const message = (err instanceof Error ? err.message : String(err)).slice(0, 10_000);
    if (!cancelled) log.warn({ err: isFerryError(err) ? { code: err.code, message } : err }, 'change capture failed');
    const retainedBytes = await retained(opts, log);
    const processed = statistics.reduce((n, s) => n + s.processed, 0);
    const failed = statistics.reduce((n, s) => n + s.failed, 0);
    return {
      statistics,
      processed,
      failed,
      cancelled,
      ...(cancelled ? {} : { fatal: message }),
      ...(retainedBytes !== undefined ? { retainedBytes } : {}),
    };
  }
}

/** The first copies of entities new to the capture: the ordinary Replication, in full. */
async function firstCopies(
  opts: CaptureOptions,
  entities: string[],
  state: ReplicationStateStore,
  log: Logger,
): Promise<ReplicateResult> {
  log.info({ entities }, 'first copy of the captured entities');
  return replicate({ ...opts, entities, state, log });
}

/** The log kept for the capture, warned about above the threshold. */
async function retained(opts: CaptureOptions, log: Logger): Promise<number | undefined> {
  try {
    const s = await opts.source.changeCaptureStatus(opts.name, { signal: AbortSignal.timeout(15_000) });
    if (s.lost) log.error({ capture: opts.name }, 'the change capture was invalidated by the source');
    else if (s.retainedBytes > opts.settings.retainedWarnBytes)
      log.warn(
        { retainedBytes: s.retainedBytes, warnAboveBytes: opts.settings.retainedWarnBytes },
        'the source keeps much log for the change capture: is the Replication running?',
      );
    else log.info({ retainedBytes: s.retainedBytes }, 'change capture log kept by the source');
    return s.retainedBytes;
  } catch {
    return undefined;
  }
}

/**
 * {@link applyChanges} again from the saved position while the source or the target is away (a
 * restart, a dropped connection: `isTargetFailure`), with back-off, for at most the retry budget
 * since the last batch that landed; past it, or for any other failure, the run fails.
 */
async function applyWithRetry(
  opts: CaptureOptions,
  stateFile: CaptureStateFile,
  log: Logger,
): Promise<{ stats: Map<string, RunMapStats>; cancelled: boolean }> {
  const retry = { ...DEFAULT_TARGET_RETRY, ...opts.targetRetry };
  const tallies = await entityTallies(opts);
  const started = performance.now();
  let away: number | undefined;
  let delay = retry.firstDelayMs;
  for (let attempt = 1; ; attempt++) {
    const state = await stateFile.load(opts.name);
    if (!state) throw new Error(`The change capture's position file is missing in ${opts.stateDir}.`);
    let landed = false;
    try {
      const cancelled = await applyChanges(opts, state, stateFile, tallies, log, () => {
        landed = true;
      });
      return { stats: finish(tallies, started), cancelled };
    } catch (err) {
      if (opts.signal.aborted) return { stats: finish(tallies, started), cancelled: true };
      if (landed) {
        away = undefined;
        delay = retry.firstDelayMs;
      }
      away ??= Date.now();
      if (!isTargetFailure(err) || Date.now() - away + delay > retry.budgetMs) throw err;
      log.warn(
        { attempt, waitMs: delay, code: err.code, err: { message: err.message } },
        'change capture interrupted: the source or the target is away; reading again from the saved position',
      );
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, delay);
        opts.signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
      });
      delay = Math.min(delay * 2, retry.maxDelayMs);
    }
  }
}

/** Each entity's target (ensured: created or widened) and its counts. */
async function entityTallies(opts: CaptureOptions): Promise<Map<string, EntityTally>> {
  const tallies = new Map<string, EntityTally>();
  for (const name of [...new Set(opts.entities)]) {
    const src = await opts.source.entity(name, { signal: opts.signal });
    const ensured = await opts.target.ensureEntity(src, { signal: opts.signal });
    const dest = ensured.entity;
    tallies.set(name, {
      stats: changeStats(name),
      dest,
      sourceKeys: src.fields.filter((f) => f.isPrimaryKey).map((f) => f.fullName),
      targetKeys: dest.fields.filter((f) => f.isPrimaryKey).map((f) => f.fullName),
    });
  }
  return tallies;
}

/** Reads and applies changes from the saved position; the position moves as batches land. Answers whether it was stopped. */
async function applyChanges(
  opts: CaptureOptions,
  state: CaptureState,
  stateFile: CaptureStateFile,
  tallies: Map<string, EntityTally>,
  log: Logger,
  landed: () => void,
): Promise<boolean> {
  const batchSize = Math.max(1, Math.min(opts.batchSize ?? opts.target.bulkLimit, opts.target.bulkLimit));
  log.info({ from: state.position, continuous: opts.settings.continuous, batchSize }, 'reading changes');
  let position = state.position;
  let changes = 0;
  try {
    for await (const batch of opts.source.readChanges(
      opts.name,
      { from: position, untilNow: !opts.settings.continuous, batchSize, maxWaitMs: opts.maxWaitMs ?? 200 },
      { signal: opts.signal },
    )) {
      const t0 = performance.now();
      await applyBatch(opts, batch.changes, tallies);
      changes += batch.changes.length;
      const ms = performance.now() - t0;
      addTime(tallies, batch.changes, ms);
      log.debug({ changes: batch.changes.length, ms: Math.round(ms) }, 'change batch applied');
      if (batch.position !== position) {
        position = batch.position;
        await stateFile.save({ ...state, position });
        await opts.source.confirmChanges(opts.name, position, { signal: opts.signal });
      }
      landed();
      for (const [entity, t] of tallies)
        opts.onProgress?.({ entity, processed: t.stats.processed, failed: t.stats.failed });
    }
  } catch (err) {
    if (opts.signal.aborted) return true;
    throw err;
  }
  log.info({ changes, position }, 'changes applied');
  return opts.signal.aborted;
}

/** Applies one batch: compacted by key per entity, then deletes and upserts. */
async function applyBatch(
  opts: CaptureOptions,
  changes: readonly CapturedChange[],
  tallies: Map<string, EntityTally>,
): Promise<void> {
  const byEntity = new Map<string, Map<string, CapturedChange>>();
  const counts = new Map<string, number>();
  for (const c of changes) {
    const t = tallies.get(c.entity);
    if (!t) continue;
    counts.set(c.entity, (counts.get(c.entity) ?? 0) + 1);
    let rows = byEntity.get(c.entity);
    if (!rows) byEntity.set(c.entity, (rows = new Map()));
    const key = JSON.stringify(t.sourceKeys.map((k) => c.record[k] ?? null));
    const prev = rows.get(key);
    // The row's last state: an update after an upsert keeps the fields it left out.
    if (prev && prev.op === 'upsert' && c.op === 'upsert')
      rows.set(key, { ...c, record: { ...prev.record, ...c.record } });
    else {
      rows.delete(key);
      rows.set(key, c);
    }
  }
  for (const [entity, rows] of byEntity) {
    const t = tallies.get(entity) as EntityTally;
    const deletes: ConnectorRecord[] = [];
    const upserts: ConnectorRecord[] = [];
    for (const c of rows.values()) (c.op === 'delete' ? deletes : upserts).push(c.record);
    const keyFields = t.targetKeys.length ? t.targetKeys : t.sourceKeys;
    const refused: Array<{ record: ConnectorRecord; result: WriteResult; action: string }> = [];
    if (deletes.length) {
      const res = await opts.target.write('Delete', t.dest.fullName, deletes, { keyFields, signal: opts.signal });
      res.forEach((r, i) => {
        // A row deleted in the source that the target no longer has is where it should be.
        if (!r.ok && r.error.code !== 'NotFound')
          refused.push({ record: deletes[i] as ConnectorRecord, result: r, action: 'Delete' });
      });
    }
    if (upserts.length) {
      const res = await opts.target.write('Upsert', t.dest.fullName, upserts, { keyFields, signal: opts.signal });
      res.forEach((r, i) => {
        if (!r.ok) refused.push({ record: upserts[i] as ConnectorRecord, result: r, action: 'Upsert' });
      });
    }
    t.stats.processed += counts.get(entity) ?? 0;
    t.stats.failed += refused.length;
    for (const f of refused) opts.onRecordError?.(recordError(entity, t, f.record, f.result, f.action));
  }
}

function recordError(
  entity: string,
  t: EntityTally,
  record: ConnectorRecord,
  result: WriteResult,
  action: string,
): RunRecordError {
  const error = result.ok ? undefined : result.error;
  const key = sourceKeyOf(t.sourceKeys, record);
  return {
    id: randomUUID(),
    mapName: entity,
    sourceEntity: entity,
    blockId: 'write',
    blockName: action,
    code: 'RUN_WRITE_FAILED',
    errorMessage:
      `${t.dest.fullName} refused the ${action.toLowerCase()} of a changed row: ${error?.message ?? 'no reason given'}`.slice(
        0,
        10_000,
      ),
    errorDetail: JSON.stringify({ code: error?.code, key }).slice(0, 20_000),
    canReprocess: false,
    ...(key ? { sourceKey: key } : {}),
  };
}

function changeStats(name: string): RunMapStats {
  const zero = { processed: 0, failed: 0, minMs: 0, maxMs: 0, avgMs: 0, totalMs: 0 };
  return {
    mapName: name,
    entity: name,
    ...zero,
    totalTime: '00:00:00',
    blocks: [
      { blockId: 'read', name: 'Changes', blockType: 'Query', ...zero },
      { blockId: 'write', name: 'Upsert', blockType: 'Upsert', ...zero },
    ],
  };
}

function addTime(tallies: Map<string, EntityTally>, changes: readonly CapturedChange[], ms: number): void {
  if (changes.length === 0) return;
  const per = ms / changes.length;
  const seen = new Set<string>();
  for (const c of changes) seen.add(c.entity);
  for (const e of seen) {
    const s = tallies.get(e)?.stats;
    if (!s) continue;
    s.minMs = s.minMs === 0 ? per : Math.min(s.minMs, per);
    s.maxMs = Math.max(s.maxMs, per);
  }
}

function finish(tallies: Map<string, EntityTally>, started: number): Map<string, RunMapStats> {
  const total = performance.now() - started;
  const out = new Map<string, RunMapStats>();
  for (const [name, t] of tallies) {
    const s = t.stats;
    s.totalMs = Math.round(total);
    s.avgMs = s.processed ? total / s.processed : 0;
    s.totalTime = hms(total);
    for (const b of s.blocks ?? []) Object.assign(b, { processed: s.processed, failed: s.failed });
    out.set(name, s);
  }
  return out;
}

/** The copies' statistics, then each entity's changes. */
function merge(copies: RunMapStats[], changes: Map<string, RunMapStats>, cancelled: boolean): ReplicateResult {
  const statistics = [...copies, ...[...changes.values()].filter((s) => s.processed > 0 || copies.length === 0)];
  const processed = statistics.reduce((n, s) => n + s.processed, 0);
  const failed = statistics.reduce((n, s) => n + s.failed, 0);
  return { statistics, processed, failed, cancelled };
}

/** Drops a Solution's capture from its source (the Solution was deleted); nothing when there is none. */
export async function dropCapture(source: HostConnection, solutionId: string): Promise<void> {
  if (!source.capturesChanges) return;
  await source.dropChangeCapture(captureName(solutionId));
}
