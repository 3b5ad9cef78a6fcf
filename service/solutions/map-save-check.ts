import type { Kysely } from 'kysely';
import { validateModel } from '../../src/maps/compiler/validate.js';
import { connectionIdsOf } from '../../src/maps/open-run.js';
import type { ConnectionMetadata as MetadataDocument } from '../../src/protocol/metadata.js';
import type { ConnectionMetadata } from '../connections/metadata.js';
import { getConnection } from '../store/repos/connections.repo.js';
import { markMapValidity } from '../store/repos/map-validations.repo.js';
import type { Database } from '../store/schema.js';
import { blockErrorsOf, type BlockError } from './block-errors.js';
import type { MapView } from './maps.js';

/** What a save answers about the saved revision. */
export interface SaveCheck {
  /** false: a Connection the Map names has no metadata in the Service yet, so nothing was checked. */
  readonly validated: boolean;
  readonly valid: boolean;
  readonly errors: BlockError[];
}

/**
 * Checks a just-saved revision against the metadata the Service already holds, without asking an
 * Agent (a save does not wait for one): when every Connection's metadata is cached the revision is
 * validated as validate and prepare do, its `valid` follows, and the errors come back per Block.
 * Otherwise the revision stays unchecked (valid false) until validate or prepare loads the metadata.
 */
export async function checkSavedMap(
  db: Kysely<Database>,
  metadata: ConnectionMetadata,
  orgId: number,
  view: MapView,
): Promise<SaveCheck> {
  const documents: Record<string, MetadataDocument> = {};
  for (const id of connectionIdsOf(view.model)) {
    const conn = await getConnection(db, orgId, id);
    // The validator reports the Blocks of a Connection that does not exist.
    if (!conn) continue;
    const md = await metadata.cached(conn);
    if (!md) return { validated: false, valid: false, errors: [] };
    documents[conn.id] = md;
  }
  const v = validateModel(view.model, documents);
  await markMapValidity(db, view.row.id, view.revision.revision, v.valid);
  return { validated: true, valid: v.valid, errors: blockErrorsOf(v.results) };
}
