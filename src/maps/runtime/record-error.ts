/**
 * The one constructor of a record error (SPEC.md "Error"), for every copy that reports one: a Map
 * run's failing Block (run.ts) and a Replication's refused write (solutions/replicate-entity.ts).
 * It gives the error its time-ordered ID (the Service's index of errors grows at its right edge
 * instead of splitting pages at random) and keeps every field within the protocol's bounds
 * (protocol/solutions.ts RunRecordError), so no sender cuts them on its own.
 */
import { sourceKeyOf } from '../../protocol/solutions.js';
import { uuidV7 } from '../../util/uuid-v7.js';
import type { MapRecordError } from './run-types.js';

/** What a record error says; {@link recordError} bounds it and gives it its ID. */
export interface RecordErrorInput {
  mapName: string;
  sourceEntity: string;
  blockId: string;
  blockName: string;
  code: string;
  errorMessage: string;
  /** JSON of the error's details. */
  errorDetail: string;
  /** The failing source record and its entity's key fields: the error names the record by its key. */
  key?: { readonly fields: readonly string[]; readonly record: Readonly<Record<string, unknown>> } | undefined;
  /** The source record's position in what the run read, from 1. */
  sourceRow?: number | undefined;
}

/** The protocol's bounds of a record error's texts (protocol/solutions.ts RunRecordError). */
const MAX = { name: 500, entity: 1000, message: 10_000, detail: 20_000 } as const;

const cut = (s: string, n: number): string => (s.length > n ? s.slice(0, n) : s);

/** A record error, bounded, with a new time-ordered ID; not reprocessable until a failed-record copy is attached. */
export function recordError(e: RecordErrorInput): MapRecordError {
  const rec: MapRecordError = {
    id: uuidV7(),
    mapName: cut(e.mapName, MAX.name),
    sourceEntity: cut(e.sourceEntity, MAX.entity),
    blockId: e.blockId,
    blockName: cut(e.blockName, MAX.name),
    code: e.code,
    errorMessage: cut(e.errorMessage, MAX.message),
    errorDetail: cut(e.errorDetail, MAX.detail),
    canReprocess: false,
  };
  const key = e.key ? sourceKeyOf(e.key.fields, e.key.record) : undefined;
  if (key) rec.sourceKey = key;
  if (e.sourceRow !== undefined) rec.sourceRow = e.sourceRow;
  return rec;
}
