/**
 * A target written by an older Agent keeps its checkpoints under the key of that day
 * (`rs:<connection>:<entity>:<field>`, `ferry-map-<solution>-<map>`): the next run reads them
 * there, so an upgrade neither copies a keyless entity twice nor loses its place.
 */
import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CHECKPOINT_TABLE } from '../../../src/connectors/sdk.js';
import { checkpointKeyOf } from '../../../src/maps/runtime/checkpoint.js';
import { MemoryReplicationState } from '../../../src/solutions/replicate.js';
import { EVENTS, count, makeSource, open, run, tempDir, type Conns } from './replicate-helpers.js';
import { expectEqual } from './replicate-targets.js';

describe('a Replication checkpoint kept under the key of an older Agent', () => {
  const dir = tempDir();
  const opened: Conns[] = [];
  afterAll(async () => {
    for (const c of opened) await c.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('is read by the next run, which copies exactly the rest of a keyless entity', async () => {
    const sourceFile = path.join(dir, 'source.db');
    const targetFile = path.join(dir, 'target.db');
    makeSource(sourceFile);
    const conns = await open(sourceFile, { connector: 'SQLite', properties: { file: targetFile, create: 'true' } });
    opened.push(conns);
    // Stopped part-way: the target's checkpoint stands at the last batch written.
    const stop = new AbortController();
    const first = await run(conns, new MemoryReplicationState(), ['events'], {
      batchSize: 700,
      signal: stop.signal,
      onProgress: (p) => {
        if (p.processed >= 2100) stop.abort();
      },
    });
    expect(first.cancelled).toBe(true);
    expect(await count(conns.target, 'events')).toBe(2100);

    // The checkpoint row as an older Agent named it; the Agent's own files are gone too (a new home).
    const key = checkpointKeyOf({
      kind: 'entity',
      sourceConnectionId: conns.source.connectionId,
      entity: 'events',
      field: 'changed_on',
    });
    expect(key.key).toMatch(/^ferry:rs:/);
    expect(key.legacy).toMatch(/^rs:/);
    const db = new Database(targetFile);
    try {
      const moved = db.prepare(`UPDATE "${CHECKPOINT_TABLE}" SET key = ? WHERE key = ?`).run(key.legacy, key.key);
      expect(moved.changes).toBe(1);
    } finally {
      db.close();
    }

    const second = await run(conns, new MemoryReplicationState(), ['events']);
    // Only what the first run had not written: nothing doubled in a table without a key.
    expect(second.by).toEqual({ events: EVENTS - 2100 });
    await expectEqual(conns, 'events');
  });
});
