import {
  relationshipsByEntity,
  sqlEntity,
  SQL_CONNECTION_ACTIONS,
  type ConnectionMetadata,
} from '../../src/connectors/sdk.js';
import type { PgTable } from './catalogue.js';

export function connectionMetadata(tables: PgTable[]): ConnectionMetadata {
  const rels = relationshipsByEntity(tables.flatMap((t) => t.foreignKeys));
  const entities = tables.map((t) =>
    sqlEntity(
      {
        id: String(t.oid),
        name: t.schema === 'public' ? t.name : `${t.schema}.${t.name}`,
        fullName: t.fullName,
        originalName: `${t.schema}.${t.name}`,
        description: t.description,
        view: t.kind === 'view',
        columns: t.columns.map((c) => ({ ...c, nativeType: c.sqlType })),
      },
      rels.get(t.fullName) ?? [],
    ),
  );
  return { entities, actions: [...SQL_CONNECTION_ACTIONS] };
}
