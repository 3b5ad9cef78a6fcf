import {
  relationshipsByEntity,
  sqlEntity,
  SQL_CONNECTION_ACTIONS,
  type ConnectionMetadata,
} from '../../src/connectors/sdk.js';
import type { SqliteTable } from './catalogue.js';

/** The SDK metadata of the catalogue. */
export function connectionMetadata(tables: SqliteTable[]): ConnectionMetadata {
  const rels = relationshipsByEntity(tables.flatMap((t) => t.foreignKeys));
  const entities = tables.map((t) =>
    sqlEntity(
      {
        id: t.fullName,
        name: t.name,
        fullName: t.fullName,
        originalName: t.name,
        description: t.isView ? 'view' : '',
        view: t.isView,
        columns: t.columns.map((c) => ({ ...c, description: '', nativeType: c.declared, readOnly: c.generated })),
      },
      rels.get(t.fullName) ?? [],
    ),
  );
  return { entities, actions: [...SQL_CONNECTION_ACTIONS] };
}
