import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import { FerryError, invalid, isFerryError } from '../../src/errors/ferry-error.js';
import { walkBlocks, type Block, type MapModel } from '../../src/protocol/map.js';
import { PREVIEW_LIMIT, PreviewResult } from '../../src/protocol/previews.js';
import { requireAgent } from '../agents/agents.js';
import { COMMANDS } from '../../src/protocol/commands.js';
import type { AgentCommand, AgentCommands } from '../agents/commands.js';
import { agentError } from '../gateway/agent-command.js';
import { openProperties } from '../connections/properties.js';
import type { SecretBox } from '../crypto/master-key.js';
import { getConnection } from '../store/repos/connections.repo.js';
import {
  completeMapPreview,
  getMapPreview,
  insertMapPreview,
  latestMapPreview,
  pruneMapPreviews,
} from '../store/repos/map-previews.repo.js';
import { getSolution } from '../store/repos/solutions.repo.js';
import type { Database, MapPreviewRow, OrgRow, SolutionRow } from '../store/schema.js';
import { newId, nowIso } from '../util/values.js';
import { requireCurrentModel } from './map-edit.js';
import type { SolutionMaps } from './maps.js';
import { solutionNotFound } from './solutions.js';

/** Previews and native query tests are kept this long after they were requested. */
export const PREVIEW_RETENTION_MS = 60 * 60 * 1000;
/** A preview still Requested this long after it was sent will get no answer (the Service that waited for it stopped). */
const ANSWER_DEADLINE_MS = COMMANDS.previewQuery.timeoutMs + 30_000;

type Kind = MapPreviewRow['kind'];

/** A preview or native query test as read: its row and, once Completed, its records. */
export interface MapPreviewView {
  readonly row: MapPreviewRow;
  readonly result: PreviewResult | undefined;
}

/** A native query test started for one Block. */
export interface NativeQueryTestStarted {
  readonly id: string;
  readonly blockId: string;
  readonly blockName: string;
}

export interface MapPreviewsOptions {
  readonly db: Kysely<Database>;
  readonly secrets: SecretBox;
  readonly commands: AgentCommands;
  readonly maps: SolutionMaps;
  readonly log: FastifyBaseLogger;
}

/**
 * Preview query and native query test (SPEC.md "Maps"): the first records a Query or Fetch Block
 * reads (its filter applied), or the first rows a Native Query Block's statement returns, read
 * through the Solution's Agent with the Connection's Connector.
 *
 *   POST …/previewquery ─▶ model (the body's, else the stored Map) ─▶ Block ─▶ Connection
 *        ─▶ map_previews row Requested ─▶ answered {previewId} at once
 *        └─ previewQuery / nativeQueryTest to the Agent ─▶ row Completed (records) | Failed (error)
 *   GET  …/previewquery/{previewId} ─▶ 404 while Requested (POLL) ─▶ the row
 *
 * Rows live in the store, not in this process: behind a load balancer the GET may reach another
 * replica than the one waiting for the Agent. A row whose Service stopped before the answer ends
 * Failed after the command's time-out.
 */
export class MapPreviews {
  constructor(private readonly opts: MapPreviewsOptions) {}

  /** Starts a preview of a Query or Fetch Block (`blockId`; blank: the Map's starter). */
  async preview(
    org: OrgRow,
    solutionId: string,
    mapId: number,
    blockId: string | undefined,
    body: unknown,
  ): Promise<{ previewId: string; block: Block; limit: number }> {
    const solution = await this.#solution(org.id, solutionId);
    const model = await this.#model(org.id, solution, mapId, body);
    const block = previewBlock(model, blockId);
    const limit = block.blockType === 'Fetch' ? Math.min(block.maxRecords ?? 1, PREVIEW_LIMIT) : PREVIEW_LIMIT;
    const previewId = await this.#send(org, solution, mapId, 'previewquery', block, limit, (conn) => ({
      type: 'previewQuery',
      ...conn,
      entity: block.entity ?? '',
      ...(block.filter ? { filter: block.filter } : {}),
      limit,
    }));
    return { previewId, block, limit };
  }

  /** A preview's result; 404 while the Agent has not answered (POLL). */
  async previewResult(orgId: number, solutionId: string, mapId: number, previewId: string): Promise<MapPreviewView> {
    const solution = await this.#solution(orgId, solutionId);
    const row = await getMapPreview(this.opts.db, solution.id, 'previewquery', previewId.toLowerCase());
    if (!row || row.mapId !== mapId)
      throw new FerryError(
        'API_NOT_FOUND',
        `Preview ${previewId} was not found for Map ${mapId}; previews are kept for ${PREVIEW_RETENTION_MS / 60_000} minutes.`,
      );
    return this.#ready(row, `Preview ${row.id}`);
  }

  /** Starts a test of the Map's Native Query Block (`blockId`), or of each of them. */
  async nativeQueryTest(
    org: OrgRow,
    solutionId: string,
    mapId: number,
    blockId: string | undefined,
    body: unknown,
  ): Promise<NativeQueryTestStarted[]> {
    const solution = await this.#solution(org.id, solutionId);
    const model = await this.#model(org.id, solution, mapId, body);
    const started: NativeQueryTestStarted[] = [];
    for (const block of nativeQueryBlocks(model, blockId)) {
      const id = await this.#send(org, solution, mapId, 'nativequerytest', block, PREVIEW_LIMIT, (conn) => ({
        type: 'nativeQueryTest',
        ...conn,
        statement: block.statement ?? '',
        limit: PREVIEW_LIMIT,
      }));
      started.push({ id, blockId: block.blockId, blockName: block.name });
    }
    return started;
  }

  /** The latest native query test of the Map's Block (or of any of its Blocks); 404 while the Agent has not answered (POLL). */
  async nativeQueryTestResult(
    orgId: number,
    solutionId: string,
    mapId: number,
    blockId: string | undefined,
  ): Promise<MapPreviewView> {
    const solution = await this.#solution(orgId, solutionId);
    const row = await latestMapPreview(this.opts.db, solution.id, mapId, 'nativequerytest', blockId?.toLowerCase());
    if (!row) {
      throw new FerryError(
        'API_NOT_FOUND',
        `No native query test of Map ${mapId}${blockId ? ` Block ${blockId}` : ''} was found; start one with POST …/maps/${mapId}/nativequerytest (results are kept for ${PREVIEW_RETENTION_MS / 60_000} minutes).`,
      );
    }
    return this.#ready(row, `The native query test of Block ${row.blockName}`);
  }

  async #solution(orgId: number, solutionId: string): Promise<SolutionRow> {
    const row = await getSolution(this.opts.db, orgId, solutionId);
    if (!row) throw solutionNotFound(orgId, solutionId);
    return row;
  }

  /**
   * The body's model when it has one (SPEC.md: then the path's Map is not read; a model of version
   * 2.0 or older is refused, MAP_UPGRADE_REQUIRED), else the stored Map's latest revision.
   */
  async #model(orgId: number, solution: SolutionRow, mapId: number, body: unknown): Promise<MapModel> {
    if (body !== null && typeof body === 'object' && !Array.isArray(body) && Object.keys(body).length > 0) {
      return requireCurrentModel(body);
    }
    return (await this.opts.maps.get(orgId, solution.id, mapId)).model;
  }

  /** Records the request and sends the command; the Agent's answer completes the row in the background. */
  async #send(
    org: OrgRow,
    solution: SolutionRow,
    mapId: number,
    kind: Kind,
    block: Block,
    limit: number,
    command: (conn: {
      connectionId: string;
      connectorId: string;
      properties: Record<string, string>;
    }) => AgentCommand<'previewQuery' | 'nativeQueryTest'>,
  ): Promise<string> {
    const { db, commands, secrets, log } = this.opts;
    const agent = await requireAgent(db, org.id, solution.agentId);
    commands.requireConnected(agent);
    const conn = block.connectionId ? await getConnection(db, org.id, block.connectionId) : undefined;
    if (!conn) {
      throw new FerryError(
        'MAP_CONNECTION_NOT_FOUND',
        `Block ${block.name} uses Connection ${block.connectionId ?? '(none)'}, which does not exist in Organization ${org.id}: choose one of its Connections.`,
        {
          errors: [{ path: 'connectionId', message: 'unknown Connection' }],
        },
      );
    }
    const now = new Date();
    await pruneMapPreviews(db, now.toISOString());
    const id = newId();
    await insertMapPreview(db, {
      id,
      orgId: org.id,
      solutionId: solution.id,
      mapId,
      kind,
      blockId: block.blockId.toLowerCase(),
      blockName: block.name,
      entity: block.entity ?? null,
      connectionId: conn.id,
      recordLimit: limit,
      status: 'Requested',
      result: null,
      errorCode: null,
      errorMessage: null,
      requestedAt: now.toISOString(),
      completedAt: null,
      expiresAt: new Date(now.getTime() + PREVIEW_RETENTION_MS).toISOString(),
    });
    log.info(
      {
        previewId: id,
        kind,
        solutionId: solution.id,
        mapId,
        blockId: block.blockId,
        agentId: agent.id,
        connectionId: conn.id,
      },
      `${kind} requested`,
    );
    void commands
      .send(
        agent.id,
        command({ connectionId: conn.id, connectorId: conn.connectorId, properties: openProperties(secrets, conn) }),
      )
      .then(
        (result) => ({
          status: 'Completed' as const,
          result: JSON.stringify(result),
          errorCode: null,
          errorMessage: null,
        }),
        (err: unknown) => ({ status: 'Failed' as const, result: null, ...failureOf(err) }),
      )
      .then((patch) => completeMapPreview(db, id, { ...patch, completedAt: nowIso() }))
      .catch((err: unknown) => log.error({ err, previewId: id }, `${kind} result not stored`));
    return id;
  }

  /** The row once answered; one that will never be answered is Failed; otherwise 404 (POLL). */
  #ready(row: MapPreviewRow, what: string): MapPreviewView {
    if (row.status === 'Requested') {
      if (Date.now() - Date.parse(row.requestedAt) <= ANSWER_DEADLINE_MS) {
        throw new FerryError(
          'API_NOT_FOUND',
          `${what} is not ready yet: the Agent is reading the records. Repeat the call in a few seconds.`,
          { details: { pending: true } },
        );
      }
      return {
        row: {
          ...row,
          status: 'Failed',
          errorCode: 'CHN_TIMEOUT',
          errorMessage: `The Agent did not answer within ${ANSWER_DEADLINE_MS / 1000} s; start it again.`,
        },
        result: undefined,
      };
    }
    if (row.status !== 'Completed' || row.result === null) return { row, result: undefined };
    const parsed = PreviewResult.safeParse(JSON.parse(row.result));
    return { row, result: parsed.success ? parsed.data : undefined };
  }
}

function findBlock(model: MapModel, blockId: string): Block {
  const want = blockId.toLowerCase();
  const block = [...walkBlocks(model.blocks)].find((b) => b.blockId.toLowerCase() === want);
  if (!block)
    throw invalid(`Map ${model.name} has no Block ${blockId}.`, [
      { path: 'blockId', message: 'no such Block in the Map' },
    ]);
  return block;
}

/** The Block a preview reads: `blockId`'s (a Query or Fetch), or the Map's starter. */
function previewBlock(model: MapModel, blockId: string | undefined): Block {
  const block = blockId ? findBlock(model, blockId) : model.blocks[0];
  if (!block || (block.blockType !== 'Query' && block.blockType !== 'Fetch')) {
    const hint = block?.blockType === 'NativeQuery' ? ' Test a Native Query Block with POST …/nativequerytest.' : '';
    throw invalid(
      blockId
        ? `Block ${block?.name ?? blockId} is a ${block?.blockType ?? 'missing'} Block: a preview reads a Query or Fetch Block.${hint}`
        : `Map ${model.name} does not start with a Query Block: name a Fetch Block in blockId.${hint}`,
      [{ path: 'blockId', message: 'a Query or Fetch Block' }],
    );
  }
  if (!block.connectionId || !block.entity) {
    throw invalid(
      `Block ${block.name} has no ${block.connectionId ? 'entity' : 'Connection'} yet: choose one, then preview.`,
      [{ path: 'blockId', message: 'the Block needs a Connection and an entity' }],
    );
  }
  return block;
}

/** The Native Query Blocks a test runs: `blockId`'s, or every one of the Map. */
function nativeQueryBlocks(model: MapModel, blockId: string | undefined): Block[] {
  const blocks = blockId
    ? [findBlock(model, blockId)]
    : [...walkBlocks(model.blocks)].filter((b) => b.blockType === 'NativeQuery');
  if (blocks.length === 0)
    throw invalid(`Map ${model.name} has no Native Query Block to test.`, [
      { path: 'nativeQueryBlockID', message: 'no Native Query Block' },
    ]);
  for (const b of blocks) {
    if (b.blockType !== 'NativeQuery')
      throw invalid(`Block ${b.name} is a ${b.blockType} Block, not a Native Query Block.`, [
        { path: 'nativeQueryBlockID', message: 'a Native Query Block' },
      ]);
    if (!b.connectionId || !b.statement?.trim()) {
      throw invalid(`Native Query Block ${b.name} has no ${b.connectionId ? 'statement' : 'Connection'} yet.`, [
        { path: 'nativeQueryBlockID', message: 'the Block needs a Connection and a statement' },
      ]);
    }
  }
  return blocks;
}

/** The code and message a failed command leaves: the Agent's (the Connector's error) when it answered, else why it did not. */
function failureOf(err: unknown): { errorCode: string; errorMessage: string } {
  if (isFerryError(err)) {
    const answered = agentError(err);
    return { errorCode: answered?.code ?? err.code, errorMessage: (answered?.message ?? err.message).slice(0, 10_000) };
  }
  return { errorCode: 'SVC_INTERNAL', errorMessage: err instanceof Error ? err.message : String(err) };
}
