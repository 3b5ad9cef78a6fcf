import pg from 'pg';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { startService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';

const postgres = STORE_TARGETS.find((t) => t.name === 'postgres');

// Runs only where FERRY_TEST_DATABASE_URL names a server (always in CI): a SQLite store has no connections to lose.
describe.skipIf(!postgres)('the Service when PostgreSQL drops its connections', () => {
  it('keeps serving after every connection of its pool is terminated', async () => {
    const svc = await startService({ name: 'postgres' });
    try {
      expect((await svc.request('GET', '/v1/orgs')).status).toBe(200);
      const url = process.env['FERRY_TEST_DATABASE_URL'] as string;
      const dbName = (
        await svc.service.store.db
          .selectNoFrom((eb) => eb.fn<string>('current_database', []).as('name'))
          .executeTakeFirstOrThrow()
      ).name;
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      try {
        const killed = await admin.query(
          'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
          [dbName],
        );
        expect(killed.rowCount).toBeGreaterThan(0);
      } finally {
        await admin.end();
      }
      // The idle clients' errors are heard, not fatal; the next requests get fresh connections.
      const deadline = Date.now() + 10_000;
      let status = 0;
      while (Date.now() < deadline) {
        status = (await svc.request('GET', '/v1/orgs')).status;
        if (status === 200) break;
        expect(status).toBeLessThan(600);
      }
      expect(status).toBe(200);
      const created = await svc.request('POST', `/v1/orgs/${svc.orgId}/securityrules`, {
        body: {
          name: 'after the fault',
          allowedIpRangeStartAddress: '10.9.0.0',
          allowedIpRangeEndAddress: '10.9.0.9',
          apiAccessEnabled: true,
        },
      });
      expect(created.status).toBe(201);
    } finally {
      await svc.close();
    }
  });

  it('survives losing a connection it holds between two queries of a transaction', async () => {
    const svc = await startService({ name: 'postgres' });
    // An 'error' nobody hears ends the process; catch it here so the test fails instead.
    const uncaught: unknown[] = [];
    const hear = (err: unknown): void => void uncaught.push(err);
    process.on('uncaughtException', hear);
    try {
      const url = process.env['FERRY_TEST_DATABASE_URL'] as string;
      const outcome = await svc.service.store.db
        .transaction()
        .execute(async (trx) => {
          const { rows } = await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(trx);
          const admin = new pg.Client({ connectionString: url });
          await admin.connect();
          try {
            await admin.query('SELECT pg_terminate_backend($1)', [rows[0]?.pid]);
          } finally {
            await admin.end();
          }
          // The client is checked out and idle when its server goes: the pool is not listening.
          await new Promise((resolve) => setTimeout(resolve, 300));
          await sql`SELECT 1`.execute(trx);
          return 'committed';
        })
        .catch((err: unknown) => err);
      expect(outcome).toBeInstanceOf(Error);
      expect(uncaught).toEqual([]);
      expect((await svc.request('GET', '/v1/orgs')).status).toBe(200);
    } finally {
      process.off('uncaughtException', hear);
      await svc.close();
    }
  });
});
