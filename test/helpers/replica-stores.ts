import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openStore, type Store } from '../../service/store/store.js';
import { createTestDatabase } from './stores.js';

/**
 * Stores of `n` Service replicas on one fresh PostgreSQL database: each its own pool of connections,
 * as each replica process has. `close` closes them and drops the database.
 */
export async function replicaStores(n: number): Promise<{ stores: Store[]; close: () => Promise<void> }> {
  const database = await createTestDatabase();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-replica-stores-'));
  const stores: Store[] = [];
  const close = async (): Promise<void> => {
    await Promise.all(stores.map((s) => s.close()));
    await database.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    // One after the other: the first migrates the database, the others find it up to date.
    for (let i = 0; i < n; i++)
      stores.push(await openStore({ databaseUrl: database.url, dataDir, preinstalledConnectors: [] }));
  } catch (err) {
    await close();
    throw err;
  }
  return { stores, close };
}
