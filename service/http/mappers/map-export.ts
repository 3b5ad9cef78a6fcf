import type { ConnectorCatalogue } from '../../marketplace/catalogue.js';
import type { MapView } from '../../solutions/maps.js';
import type { ConnectionsById } from '../../solutions/map-transfer.js';
import type { MapAnswer } from '../schemas/map.schema.js';
import { toMap } from './map.js';

/**
 * A Map as the export file holds it: the API's Map model with the names, aliases and Connector
 * names of its Connections filled in, so that an import elsewhere can match them by name.
 */
export function toExportedMap(view: MapView, connections: ConnectionsById, catalogue: ConnectorCatalogue): MapAnswer {
  const base = toMap(view);
  const describe = (
    id: string | null,
  ): { connectionName: string | null; connectionAlias: string | null; connectionType: string | null } => {
    const c = id ? connections.get(id.toLowerCase()) : undefined;
    return {
      connectionName: c?.name ?? null,
      connectionAlias: c?.alias ?? null,
      connectionType: c ? (catalogue.get(c.connectorId)?.name ?? c.connectorId) : null,
    };
  };
  const source = describe(base.sourceConnectionId);
  return {
    ...base,
    targetConnections: base.targetConnections.map((t) => ({ ...t, ...describe(t.connectionId) })),
    sourceConnectionName: source.connectionName,
    sourceConnectionAlias: source.connectionAlias,
    sourceConnectionType: source.connectionType,
  };
}
