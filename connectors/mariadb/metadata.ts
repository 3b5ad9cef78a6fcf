import {
  relationshipsByEntity,
  sqlEntity,
  SQL_CONNECTION_ACTIONS,
  type ConnectionMetadata,
} from '../../src/connectors/sdk.js';
import type { MariaTable } from './catalogue.js';

export function connectionMetadata(tables: MariaTable[], database: string): ConnectionMetadata {
  const rels = relationshipsByEntity(tables.flatMap((t) => t.foreignKeys));
  const entities = tables.map((t) =>
    sqlEntity(
      {
        id: `${database}.${t.name}`,
        name: t.name,
        fullName: t.fullName,
        originalName: t.name,
        description: t.description,
        view: t.kind === 'view',
        columns: t.columns.map((c) => ({ ...c, nativeType: c.columnType })),
      },
      rels.get(t.fullName) ?? [],
    ),
  );
  return { entities, actions: [...SQL_CONNECTION_ACTIONS] };
}
