import { sql, type Kysely, type Migration } from 'kysely';
import type { StoreDialect } from '../dialect.js';

/** The channel the triggers NOTIFY: service/events/access-cache.ts listens on it (store-changes.ts). */
export const EVENT_ACCESS_CHANNEL = 'ferry_event_access';

/**
 * On PostgreSQL, a NOTIFY on {@link EVENT_ACCESS_CHANNEL} at the commit of every change to what a
 * message POST's admission reads: an Organization's Event Solution access token, its Security
 * Rules, a Solution's enabled state, Agent or name, a Message Endpoint. Every replica drops its
 * cache of them when it hears one. A row trigger with WHEN fires only on those columns' changes:
 * the UPDATE of an endpoint's counters at each message flush notifies nobody (a NOTIFY takes a
 * lock at commit). SQLite serves one process, which sees its own writes (store/write-watch.ts).
 */
export function eventAccessNotify(dialect: StoreDialect): Migration {
  return {
    async up(db: Kysely<unknown>) {
      if (dialect !== 'postgres') return;
      await sql
        .raw(
          `CREATE FUNCTION ferry_event_access_changed() RETURNS trigger LANGUAGE plpgsql AS $$
           BEGIN PERFORM pg_notify('${EVENT_ACCESS_CHANNEL}', ''); RETURN NULL; END $$`,
        )
        .execute(db);
      const triggers = [
        `CREATE TRIGGER event_access_org AFTER UPDATE ON orgs FOR EACH ROW
           WHEN (OLD.event_solution_access_token IS DISTINCT FROM NEW.event_solution_access_token)
           EXECUTE FUNCTION ferry_event_access_changed()`,
        `CREATE TRIGGER event_access_org_gone AFTER DELETE ON orgs
           FOR EACH STATEMENT EXECUTE FUNCTION ferry_event_access_changed()`,
        `CREATE TRIGGER event_access_rules AFTER INSERT OR UPDATE OR DELETE ON security_rules
           FOR EACH STATEMENT EXECUTE FUNCTION ferry_event_access_changed()`,
        `CREATE TRIGGER event_access_solution AFTER UPDATE ON solutions FOR EACH ROW
           WHEN (OLD.is_disabled IS DISTINCT FROM NEW.is_disabled OR OLD.agent_id IS DISTINCT FROM NEW.agent_id
                 OR OLD.name IS DISTINCT FROM NEW.name)
           EXECUTE FUNCTION ferry_event_access_changed()`,
        `CREATE TRIGGER event_access_solution_gone AFTER DELETE ON solutions
           FOR EACH STATEMENT EXECUTE FUNCTION ferry_event_access_changed()`,
        `CREATE TRIGGER event_access_endpoint AFTER UPDATE ON message_endpoints FOR EACH ROW
           WHEN (OLD.map_id IS DISTINCT FROM NEW.map_id OR OLD.solution_id IS DISTINCT FROM NEW.solution_id
                 OR OLD.url_map_id IS DISTINCT FROM NEW.url_map_id OR OLD.kind IS DISTINCT FROM NEW.kind
                 OR OLD.org_id IS DISTINCT FROM NEW.org_id)
           EXECUTE FUNCTION ferry_event_access_changed()`,
        `CREATE TRIGGER event_access_endpoint_made AFTER INSERT OR DELETE ON message_endpoints
           FOR EACH STATEMENT EXECUTE FUNCTION ferry_event_access_changed()`,
      ];
      for (const t of triggers) await sql.raw(t).execute(db);
    },
    async down(db: Kysely<unknown>) {
      if (dialect !== 'postgres') return;
      await sql.raw('DROP FUNCTION ferry_event_access_changed() CASCADE').execute(db);
    },
  };
}
