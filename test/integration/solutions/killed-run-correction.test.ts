/**
 * A run killed after its target committed a batch with its checkpoint and before the Agent counted
 * it: the recovered end is a batch short, and the next run, which finds the killed run's counts in
 * the target's checkpoint, reports them (runCommitted) so History counts what the target holds.
 *
 * The kill is built from two instants of one real run (csv and sqlite plugins, a real Solution
 * store): the Agent's data folder as it was at the progress report of batch k (counted through k),
 * and the target file as it was at the report of batch k + 1 (committed through k + 1) — what a
 * kill between the commit of batch k + 1 and its count leaves. Then the copy is recovered and run
 * again, as the next Agent process would.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { WorkRegistry } from '../../../src/agent/work.js';
import type { ReportBody } from '../../../src/protocol/channel.js';
import type { PreparedSolution } from '../../../src/protocol/solutions.js';
import { SolutionRunner } from '../../../src/solutions/runner.js';
import { SolutionStore } from '../../../src/solutions/solution-store.js';
import {
  NO_CAPTURE,
  peopleMap,
  peopleSolution,
  rowCount,
  SQLITE_CONNECTOR,
  sqliteTarget,
  stamp,
  usePluginHost,
  writePeople,
} from '../../helpers/people-solution.js';

const log = pino({ level: 'silent' });
type Of<K extends ReportBody['kind']> = Extract<ReportBody, { kind: K }>;

describe('a batch the target committed with its checkpoint but the killed Agent had not counted', () => {
  const plugins = usePluginHost('killed-correction');

  const copyFiles = (from: string, to: string, names: readonly string[]): void => {
    fs.mkdirSync(to, { recursive: true });
    for (const f of names) if (fs.existsSync(path.join(from, f))) fs.copyFileSync(path.join(from, f), path.join(to, f));
  };
  const copyDir = (from: string, to: string): void => {
    if (fs.existsSync(from)) fs.cpSync(from, to, { recursive: true });
  };

  function runner(store: SolutionStore, dataDir: string, report: (b: ReportBody) => void): SolutionRunner {
    return new SolutionRunner({
      store,
      host: () => Promise.resolve(plugins.host()),
      work: new WorkRegistry(),
      log,
      dataDir,
      runsOn: 'local',
      progressMs: 0,
      report,
    });
  }

  /**
   * Runs the Solution once to its end; keeps the Agent's folder at the `k`-th progress report and
   * the target's folder at the next one; recovers the killed run from those and runs again.
   */
  async function killedBetweenCommitAndCount(
    solution: PreparedSolution,
    targetDir: string,
    targetFile: string,
    table: string,
    k: number,
  ) {
    const tmp = plugins.tmp();
    const dataDir = fs.mkdtempSync(path.join(tmp, 'agent-'));
    const agentAtK = fs.mkdtempSync(path.join(tmp, 'agent-k-'));
    const targetAtNext = fs.mkdtempSync(path.join(tmp, 'target-k1-'));
    const store = new SolutionStore(path.join(dataDir, 'solutions.db'), 'agent-secret');
    store.put(solution);
    let progress = 0;
    const first = runner(store, dataDir, (body) => {
      if (body.kind !== 'runProgress' || body.processed === 0) return;
      progress++;
      // Nothing else runs while this callback does: the files are what a kill now would leave.
      if (progress === k) {
        copyFiles(dataDir, agentAtK, ['solutions.db', 'solutions.db-wal']);
        copyDir(path.join(dataDir, 'checkpoints'), path.join(agentAtK, 'checkpoints'));
      }
      if (progress === k + 1)
        copyFiles(targetDir, targetAtNext, [path.basename(targetFile), `${path.basename(targetFile)}-wal`]);
    });
    const killedRun = crypto.randomUUID();
    expect(first.start(solution.solutionId, killedRun, 'start').started).toBe(true);
    await first.idle();
    first.close();
    store.close();
    expect(progress, 'the run had more batches than the kill').toBeGreaterThan(k + 1);

    // The target as the kill left it: committed through batch k + 1.
    copyFiles(targetAtNext, targetDir, [path.basename(targetFile), `${path.basename(targetFile)}-wal`]);
    if (!fs.existsSync(path.join(targetAtNext, `${path.basename(targetFile)}-wal`)))
      fs.rmSync(`${targetFile}-wal`, { force: true });
    const held = rowCount(targetFile, table);

    const reports: ReportBody[] = [];
    const next = new SolutionStore(path.join(agentAtK, 'solutions.db'), 'agent-secret');
    const again = runner(next, agentAtK, (b) => void reports.push(b));
    expect(again.recover()).toBe(1);
    const nextRun = crypto.randomUUID();
    expect(again.start(solution.solutionId, nextRun, 'start').started).toBe(true);
    await again.idle();
    // A third run finds the checkpoint of the second: it reports nothing more about the first.
    const third = crypto.randomUUID();
    expect(again.start(solution.solutionId, third, 'start').started).toBe(true);
    await again.idle();
    again.close();
    next.close();
    const ends = reports.filter((r): r is Of<'runFinished'> => r.kind === 'runFinished');
    const corrections = reports.filter((r): r is Of<'runCommitted'> => r.kind === 'runCommitted');
    return { held, killedRun, nextRun, ends, corrections };
  }

  it("an IS Map creating into a keyless table with net change: the next run reports the killed run's last batch", async () => {
    const PEOPLE = 3_000;
    const dir = fs.mkdtempSync(path.join(plugins.tmp(), 'is-'));
    writePeople(dir, PEOPLE);
    const targetDir = fs.mkdtempSync(path.join(plugins.tmp(), 'is-target-'));
    const targetFile = path.join(targetDir, 'target.db');
    sqliteTarget(targetFile, 'CREATE TABLE people_log (id INTEGER, name TEXT)');
    const solution = peopleSolution(
      dir,
      targetFile,
      [peopleMap(7, 'people_log', { name: 'People into the log', batchSize: 250 })],
      'Log',
    );

    const { held, killedRun, nextRun, ends, corrections } = await killedBetweenCommitAndCount(
      solution,
      targetDir,
      targetFile,
      'people_log',
      4,
    );
    expect(held).toBe(5 * 250);
    const killed = ends.find((e) => e.runId === killedRun);
    expect(killed, 'the killed run ended at recovery').toMatchObject({ result: 'FatalError', processed: 4 * 250 });
    // The next run read the target's checkpoint and told what the killed run had really written.
    expect(corrections).toEqual([
      {
        kind: 'runCommitted',
        runId: killedRun,
        solutionId: solution.solutionId,
        mapId: 7,
        mapName: 'People into the log',
        processed: held,
        failed: 0,
        at: expect.any(String),
      },
    ]);
    // Between them the runs wrote every record once, and History's counts (corrected) say so.
    const second = ends.find((e) => e.runId === nextRun);
    expect(second?.processed).toBe(PEOPLE - held);
    expect(rowCount(targetFile, 'people_log')).toBe(PEOPLE);
    expect((corrections[0]?.processed ?? 0) + (second?.processed ?? 0)).toBe(PEOPLE);
  });

  it("an RS entity created into a keyless table: the next run reports the killed run's last batch", async () => {
    const NOTES = 6_000;
    const dir = fs.mkdtempSync(path.join(plugins.tmp(), 'rs-'));
    const sourceFile = path.join(dir, 'source.db');
    const src = new Database(sourceFile);
    src.exec('CREATE TABLE notes (body TEXT, updated_at DATETIME NOT NULL)');
    src.transaction(() => {
      const n = src.prepare('INSERT INTO notes VALUES (?, ?)');
      for (let i = 1; i <= NOTES; i++) n.run(`note ${i}`, stamp(i));
    })();
    src.close();
    const targetDir = fs.mkdtempSync(path.join(plugins.tmp(), 'rs-target-'));
    const targetFile = path.join(targetDir, 'target.db');
    new Database(targetFile).close();
    const solution: PreparedSolution = {
      solutionId: crypto.randomUUID(),
      orgId: 1,
      name: 'Copy',
      solutionType: 'Replication',
      version: 'v1',
      isDisabled: false,
      schedule: null,
      connections: [
        { connectionId: 'src', connectorId: SQLITE_CONNECTOR, name: 'Source', properties: { file: sourceFile } },
        { connectionId: 'tgt', connectorId: SQLITE_CONNECTOR, name: 'Target', properties: { file: targetFile } },
      ],
      maps: [],
      replication: {
        sourceConnectionId: 'src',
        targetConnectionId: 'tgt',
        selectionType: 'Selected',
        entities: ['notes'],
        checkForBulk: false,
      },
      capture: NO_CAPTURE,
      lookupTables: [],
    };

    const { held, killedRun, nextRun, ends, corrections } = await killedBetweenCommitAndCount(
      solution,
      targetDir,
      targetFile,
      'notes',
      1,
    );
    const killed = ends.find((e) => e.runId === killedRun);
    expect(killed?.processed).toBeLessThan(held);
    expect(corrections).toEqual([
      {
        kind: 'runCommitted',
        runId: killedRun,
        solutionId: solution.solutionId,
        mapName: 'notes',
        entity: 'notes',
        processed: held,
        failed: 0,
        at: expect.any(String),
      },
    ]);
    const second = ends.find((e) => e.runId === nextRun);
    expect(rowCount(targetFile, 'notes')).toBe(NOTES);
    expect(held + (second?.processed ?? 0)).toBe(NOTES);
  });
});
