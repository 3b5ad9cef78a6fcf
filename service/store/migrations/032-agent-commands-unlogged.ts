import { sql, type Kysely, type Migration } from 'kysely';
import type { StoreDialect } from '../dialect.js';

/**
 * `agent_commands` UNLOGGED on PostgreSQL (service/gateway/replica-bus.ts): a command between
 * replicas writes no WAL, so neither the sender's insert nor the holder's reply waits for a disk
 * flush at commit. A row lives for the length of one command, and the replica that waits on it
 * holds the call in memory: after a crash of the database server the table starts empty, which
 * loses nothing a waiting call still had (its connection broke with the server).
 */
export function agentCommandsUnlogged(dialect: StoreDialect): Migration {
  return {
    async up(db: Kysely<unknown>) {
      if (dialect === 'postgres') await sql`ALTER TABLE agent_commands SET UNLOGGED`.execute(db);
    },
    async down(db: Kysely<unknown>) {
      if (dialect === 'postgres') await sql`ALTER TABLE agent_commands SET LOGGED`.execute(db);
    },
  };
}
