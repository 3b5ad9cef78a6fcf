import type { ConnectorCatalogue } from '../marketplace/catalogue.js';
import { listConnections } from '../store/repos/connections.repo.js';
import type { Db } from '../store/sql.js';
import type { ConnectionRow } from '../store/schema.js';
import { idsOf } from './maps.js';
import type { SolutionView } from './solutions.js';

/** A Connection a Solution uses, with its Connector (SPEC.md "Solution Connection summary"). */
export interface SolutionConnection {
  readonly connection: ConnectionRow;
  readonly connectorName: string;
  readonly connectorLogoUrl: string | null;
}

/**
 * The Connections a Solution uses, each once, in the order a reader meets them: a Replication's
 * source then target; then each Map in run order, its source before its targets. Map models keep
 * Connection IDs in the case the client sent them, so they are matched ignoring case.
 */
export async function solutionConnections(
  db: Db,
  catalogue: ConnectorCatalogue,
  view: SolutionView,
): Promise<SolutionConnection[]> {
  const { row, maps } = view;
  const wanted = [
    row.connectionIdForSource,
    row.connectionIdForTarget,
    ...maps.flatMap((m) => [...idsOf(m.sources), ...idsOf(m.targets)]),
  ];
  const byId = new Map((await listConnections(db, row.orgId)).map((c) => [c.id.toLowerCase(), c]));
  const seen = new Set<string>();
  const out: SolutionConnection[] = [];
  for (const id of wanted) {
    const key = id?.toLowerCase();
    const connection = key === undefined ? undefined : byId.get(key);
    if (!key || !connection || seen.has(key)) continue;
    seen.add(key);
    const manifest = catalogue.get(connection.connectorId);
    out.push({ connection, connectorName: manifest?.name ?? '', connectorLogoUrl: manifest?.logoUrl ?? null });
  }
  return out;
}
