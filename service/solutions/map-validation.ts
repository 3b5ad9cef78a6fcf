import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import { FerryError, invalid, isFerryError } from '../../src/errors/ferry-error.js';
import { validateModel, type ValidationResult } from '../../src/maps/compiler/validate.js';
import type { FormulaPosition } from '../../src/maps/formula/positions.js';
import { findEntity, type MetadataByConnection } from '../../src/maps/metadata.js';
import { connectionIdsOf } from '../../src/maps/open-run.js';
import { MapModel, walkBlocks, type Block } from '../../src/protocol/map.js';
import { ConnectionMetadata as MetadataDocument } from '../../src/protocol/metadata.js';
import { requireAgent } from '../agents/agents.js';
import type { AgentCommands } from '../agents/commands.js';
import type { ConnectionMetadata } from '../connections/metadata.js';
import { getConnection } from '../store/repos/connections.repo.js';
import {
  deleteMapValidationsBefore,
  finishMapValidation,
  getMapValidation,
  insertMapValidation,
  markMapValidity,
} from '../store/repos/map-validations.repo.js';
import { getSolution } from '../store/repos/solutions.repo.js';
import type { Database, MapValidationRow, OrgRow, SolutionRow } from '../store/schema.js';
import { newId, nowIso } from '../util/values.js';
import { requireCurrentModel } from './map-edit.js';
import type { MapView } from './maps.js';
import { solutionNotFound } from './solutions.js';

/** How long a validation's results (and its metadata, for validateformula) are kept. */
export const VALIDATION_TTL_MS = 24 * 60 * 60 * 1000;
/** A validation still Running after this long was left by a Service process that stopped. */
const ABANDONED_AFTER_MS = 15 * 60 * 1000;

/** One finding of a validation, as validationresults lists it. */
export interface ValidationFinding {
  readonly blockId: string | null;
  readonly blockName: string | null;
  readonly severity: 'error' | 'warning';
  readonly code: string;
  readonly message: string;
  /** Where in the Block the formula sits (`fieldMappings.Name.targetFormula`, `condition`, …). */
  readonly formula: string | null;
  /** The target field of the mapping, or the field of the lookup condition, the formula belongs to. */
  readonly field: string | null;
  readonly position: FormulaPosition | null;
}

/** What validateformula is asked. */
export interface FormulaQuestion {
  readonly formula: string;
  readonly blockId?: string | undefined;
  readonly targetFieldDataType?: string | undefined;
  readonly path?: string | undefined;
}

/** What validateformula answers. */
export interface FormulaAnswer {
  readonly valid: boolean;
  /** The first error's message; null when valid. */
  readonly message: string | null;
  readonly errors: Array<{ code: string; message: string; position: FormulaPosition | null }>;
}

export interface MapValidationsOptions {
  readonly db: Kysely<Database>;
  readonly commands: AgentCommands;
  readonly metadata: ConnectionMetadata;
  readonly log: FastifyBaseLogger;
}

const StoredResults = z.array(z.custom<ValidationResult>((v) => typeof v === 'object' && v !== null));
const StoredMetadata = z.record(z.string(), MetadataDocument);

/**
 * Validation of a Map through the API (SPEC.md "Maps": validate, validationresults,
 * validateformula):
 *
 *   POST …/maps/{mapId}/validate ─▶ row Running, answers {validateId}
 *        └─ each Connection's metadata (cached, else loaded through the Solution's Agent and awaited)
 *           ─▶ validateModel ─▶ row Completed (results, the metadata the Blocks name)
 *                             └▶ the stored latest revision validated: the Map's `valid` follows
 *           ─▶ a load failed  ─▶ row Failed (the load errors as results)
 *   GET …/maps/{validateId}/validationresults ─▶ 404 while Running, then the findings, paged
 *   POST …/maps/{validateId}/validateformula  ─▶ the formula checked where it would sit in the Map
 *
 * The validator sees exactly the metadata the Agent sent (the metadata cache). Validations expire
 * after {@link VALIDATION_TTL_MS}.
 */
export class MapValidations {
  readonly #running = new Set<Promise<void>>();

  constructor(private readonly opts: MapValidationsOptions) {}

  /** Starts validating the Map (or `body`, a model that overrides it); answers the validation ID. */
  async start(org: OrgRow, view: MapView, body: unknown, by: string): Promise<{ validateId: string }> {
    const { db, log } = this.opts;
    const solution = await getSolution(db, org.id, view.row.solutionId);
    if (!solution) throw solutionNotFound(org.id, view.row.solutionId);
    const own = hasModel(body);
    const model: MapModel = { ...(own ? requireCurrentModel(body) : view.model), mapId: view.row.id };
    const now = nowIso();
    const row: MapValidationRow = {
      id: newId(),
      orgId: org.id,
      solutionId: solution.id,
      mapId: view.row.id,
      revision: own ? null : view.revision.revision,
      state: 'Running',
      model: JSON.stringify(model),
      metadata: null,
      valid: 0,
      results: '[]',
      creationDate: now,
      finishDate: null,
      createdBy: by,
    };
    await deleteMapValidationsBefore(db, new Date(Date.now() - VALIDATION_TTL_MS).toISOString());
    await insertMapValidation(db, row);
    const run = this.#run(org, solution, row, model)
      .catch((err: unknown) => log.warn({ err, validationId: row.id, mapId: row.mapId }, 'map validation not recorded'))
      .finally(() => this.#running.delete(run));
    this.#running.add(run);
    return { validateId: row.id };
  }

  /** The findings of a finished validation (`blockId`: one Block's only), paged; 404 while it runs. */
  async results(
    orgId: number,
    solutionId: string,
    validationId: string,
    q: { blockId?: string | undefined; limit: number; offset: number },
  ): Promise<{ items: ValidationFinding[]; total: number }> {
    const row = await this.#finished(orgId, solutionId, validationId);
    const key = q.blockId?.toLowerCase();
    const all = StoredResults.parse(JSON.parse(row.results))
      .filter((r) => key === undefined || r.blockId?.toLowerCase() === key)
      .map(toFinding);
    return { items: all.slice(q.offset, q.offset + q.limit), total: all.length };
  }

  /**
   * Checks a formula where it would sit in the validated Map: as a mapping of the Block
   * `blockId` (it reads the Blocks before it), of one of its child writes when `path` names it
   * (`children.{relationship}…`), or after the last Block when no Block is named.
   */
  async validateFormula(
    orgId: number,
    solutionId: string,
    validationId: string,
    q: FormulaQuestion,
  ): Promise<FormulaAnswer> {
    if (/^\d+$/.test(validationId)) {
      throw invalid(
        `${validationId} is a Map ID: validateformula takes the ID of a validation of the Map (the validateId that POST …/maps/${validationId}/validate answers), whose metadata it checks the formula against.`,
        [{ path: 'path.mapId', message: 'the validateId of a validation, not a Map ID' }],
      );
    }
    const row = await this.#finished(orgId, solutionId, validationId);
    if (row.state === 'Failed' || row.metadata === null) {
      throw new FerryError(
        'API_CONFLICT',
        `Validation ${row.id} could not load the metadata of the Map's Connections (see its validationresults), so it has no context for a formula; validate the Map again.`,
      );
    }
    const model = MapModel.parse(JSON.parse(row.model));
    const metadata = StoredMetadata.parse(JSON.parse(row.metadata));
    const { probe, key, label } = probeModel(model, q);
    const errors = validateModel(probe, metadata)
      .results.filter((r) => r.formula === key && r.severity === 'error')
      .map((r) => ({ code: r.code, message: formulaMessage(r, key, label), position: r.position ?? null }));
    return { valid: errors.length === 0, message: errors[0]?.message ?? null, errors };
  }

  /** Waits for the validations running in this process (the Service is closing). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.#running]);
  }

  /** A validation that has finished; 404 when unknown, expired or still running. */
  async #finished(orgId: number, solutionId: string, validationId: string): Promise<MapValidationRow> {
    const solution = await getSolution(this.opts.db, orgId, solutionId);
    if (!solution) throw solutionNotFound(orgId, solutionId);
    const row = await getMapValidation(this.opts.db, orgId, solution.id, validationId.toLowerCase());
    const age = row ? Date.now() - Date.parse(row.creationDate) : 0;
    if (!row || age > VALIDATION_TTL_MS) {
      throw new FerryError(
        'API_NOT_FOUND',
        `Validation ${validationId} was not found in Solution ${solution.id}; validations are kept for 24 hours.`,
      );
    }
    if (row.state === 'Running') {
      if (age > ABANDONED_AFTER_MS)
        throw new FerryError(
          'API_NOT_FOUND',
          `Validation ${row.id} did not finish (the Service stopped while it ran); validate the Map again.`,
        );
      throw new FerryError('API_NOT_FOUND', `Validation ${row.id} is still running; repeat the call.`, {
        details: { running: true },
      });
    }
    return row;
  }

  async #run(org: OrgRow, solution: SolutionRow, row: MapValidationRow, model: MapModel): Promise<void> {
    const { db, log } = this.opts;
    const { metadata, failures } = await this.#metadata(org, solution, model);
    const finishDate = nowIso();
    if (failures.length > 0) {
      await finishMapValidation(db, row.id, {
        state: 'Failed',
        metadata: null,
        valid: 0,
        results: JSON.stringify(failures),
        finishDate,
      });
      log.info(
        { validationId: row.id, mapId: row.mapId, failures: failures.length },
        'map validation could not load metadata',
      );
      return;
    }
    const v = validateModel(model, metadata);
    await db.transaction().execute(async (tx) => {
      await finishMapValidation(tx, row.id, {
        state: 'Completed',
        metadata: JSON.stringify(metadataNamed(model, metadata)),
        valid: v.valid ? 1 : 0,
        results: JSON.stringify(v.results),
        finishDate,
      });
      // Only a validation of the stored latest revision says whether the Map is valid (as prepare does).
      if (row.revision !== null) await markMapValidity(tx, row.mapId, row.revision, v.valid);
    });
    log.info({ validationId: row.id, mapId: row.mapId, valid: v.valid, results: v.results.length }, 'map validated');
  }

  /** The metadata of the Map's Connections, as prepare loads it; what could not be loaded becomes Map-level errors. */
  async #metadata(
    org: OrgRow,
    solution: SolutionRow,
    model: MapModel,
  ): Promise<{ metadata: MetadataByConnection; failures: ValidationResult[] }> {
    const { db, commands, log } = this.opts;
    const metadata: Record<string, MetadataDocument> = {};
    const failures: ValidationResult[] = [];
    const agent = await requireAgent(db, org.id, solution.agentId);
    for (const id of connectionIdsOf(model)) {
      const conn = await getConnection(db, org.id, id);
      // The validator reports the Blocks of a Connection that does not exist.
      if (!conn) continue;
      try {
        metadata[conn.id] = await this.opts.metadata.ensure(log, org, conn, agent.id);
      } catch (err) {
        const message = commands.isConnected(agent.id)
          ? err instanceof Error
            ? err.message
            : String(err)
          : `Agent ${agent.name} is not connected: validate loads the metadata of Connection ${conn.name} through it. Start the Agent (or wait until its status is Running) and validate again.`;
        failures.push({
          blockId: null,
          severity: 'error',
          code: isFerryError(err) ? err.code : 'API_METADATA_LOAD_FAILED',
          message,
        });
      }
    }
    return { metadata, failures };
  }
}

/** Whether a validate body carries a model (an empty body or `{}` validates the stored Map). */
function hasModel(body: unknown): boolean {
  return typeof body === 'object' && body !== null && Object.keys(body).length > 0;
}

function toFinding(r: ValidationResult): ValidationFinding {
  const field = r.formula
    ? (/^(?:fieldMappings|lookupConditions)\.(.+)\.(?:targetFormula|compareValue)$/.exec(r.formula)?.[1] ?? null)
    : null;
  return {
    blockId: r.blockId,
    blockName: r.blockName ?? null,
    severity: r.severity,
    code: r.code,
    message: r.message,
    formula: r.formula ?? null,
    field,
    position: r.position ?? null,
  };
}

/**
 * The part of the metadata the Map's Blocks name: per Connection its actions and the entities its
 * Blocks read or write, with the entities their relationships lead to. Enough to validate the
 * Map again (validateformula) without keeping whole catalogues.
 */
function metadataNamed(model: MapModel, metadata: MetadataByConnection): MetadataByConnection {
  const out: Record<string, MetadataDocument> = {};
  for (const [id, md] of Object.entries(metadata)) {
    const keep = new Set<string>();
    for (const b of walkBlocks(model.blocks)) {
      const e = b.connectionId === id ? findEntity(md, b.entity) : undefined;
      if (!e) continue;
      keep.add(e.fullName);
      for (const r of e.relationships) {
        const related = findEntity(md, r.relatedEntityFullName);
        if (related) keep.add(related.fullName);
      }
    }
    out[id] = { actions: md.actions, entities: md.entities.filter((e) => keep.has(e.fullName)) };
  }
  return out;
}

const PROBE = 'ValidateFormula';

/** `PROBE`, or `PROBE2`, `PROBE3`… : the first that `taken` (lower-case) does not hold. */
function freeName(taken: ReadonlySet<string>): string {
  let name = PROBE;
  for (let i = 2; taken.has(name.toLowerCase()); i++) name = `${PROBE}${i}`;
  return name;
}

const targetsOf = (mappings: ReadonlyArray<{ targetField: string }> | undefined): Set<string> =>
  new Set((mappings ?? []).map((m) => m.targetField.toLowerCase()));

/** The model with the formula placed as a mapping where it is asked about, and the key the validator reports it under. */
function probeModel(model: MapModel, q: FormulaQuestion): { probe: MapModel; key: string; label: string } {
  const probe = structuredClone(model);
  const mappingTo = (targetField: string) => ({
    targetField,
    targetFormula: q.formula,
    ...(q.targetFieldDataType ? { targetDataType: q.targetFieldDataType } : {}),
  });
  const label = q.path ?? 'the formula';
  if (q.blockId === undefined) {
    const name = freeName(new Set([...walkBlocks(probe.blocks)].map((b) => b.name.toLowerCase())));
    probe.blocks.push({
      blockId: newId(),
      name,
      blockType: 'MapExit',
      action: 'None',
      fieldMappings: [mappingTo(PROBE)],
    });
    return { probe, key: `fieldMappings.${PROBE}.targetFormula`, label };
  }
  const wanted = q.blockId.toLowerCase();
  const block: Block | undefined = [...walkBlocks(probe.blocks)].find((b) => b.blockId.toLowerCase() === wanted);
  if (!block)
    throw invalid(`The validated Map has no Block ${q.blockId}.`, [
      { path: 'body.blockId', message: 'not a Block of the validated Map' },
    ]);
  const child = /^children\.([^.]+)/i.exec(q.path ?? '')?.[1];
  const write =
    child === undefined ? undefined : block.children?.find((c) => c.relationship.toLowerCase() === child.toLowerCase());
  if (write) {
    const field = freeName(targetsOf(write.fieldMappings));
    write.fieldMappings.push(mappingTo(field));
    return { probe, key: `children.${write.relationship}.fieldMappings.${field}.targetFormula`, label };
  }
  const field = freeName(targetsOf(block.fieldMappings));
  block.fieldMappings = [...(block.fieldMappings ?? []), mappingTo(field)];
  return { probe, key: `fieldMappings.${field}.targetFormula`, label };
}

/** The validator's message about the probe, naming the formula as the caller does. */
function formulaMessage(r: ValidationResult, key: string, label: string): string {
  const own = r.blockName ? `${r.blockName}: ` : '';
  const text = r.message.startsWith(own) ? r.message.slice(own.length) : r.message;
  return text.startsWith(`${key}: `) ? `${label}: ${text.slice(key.length + 2)}` : text.split(key).join(label);
}
