import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import { FerryError, invalid } from '../../src/errors/ferry-error.js';
import { upgradeMap } from '../../src/maps/compiler/upgrade.js';
import { tokenize } from '../../src/maps/formula/lexer.js';
import { findEntity } from '../../src/maps/metadata.js';
import {
  MAX_BLOCK_NAME,
  walkBlocks,
  type Block,
  type BlockAction,
  type BlockType,
  type MapModel,
} from '../../src/protocol/map.js';
import type { ActionName } from '../../src/protocol/metadata.js';
import type { ConnectionMetadata } from '../connections/metadata.js';
import { getConnection } from '../store/repos/connections.repo.js';
import { getSolution } from '../store/repos/solutions.repo.js';
import type { Database, OrgRow, SolutionRow } from '../store/schema.js';
import type { SolutionMaps } from './maps.js';
import { solutionNotFound } from './solutions.js';

/** The path of the upgrade operation, as the refusals of older models name it. */
export const UPGRADE_PATH = 'POST /v1/orgs/{orgId}/solution/{solutionId}/maps/advanced/upgrade';

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The version a model says it has (`version` or `modelVersion`, any case), as text. */
function versionOf(body: unknown): string | undefined {
  if (!isObj(body)) return undefined;
  for (const [k, v] of Object.entries(body)) {
    if (!/^(model)?version$/i.test(k)) continue;
    if (typeof v === 'string' && v.trim() !== '') return v.trim();
    if (typeof v === 'number') return Number.isInteger(v) ? `${v}.0` : String(v);
  }
  return undefined;
}

/** Whether a version text is 2.0 or older (1.x, 2, 2.0). */
function atMost20(version: string): boolean {
  const m = /^(\d+)(?:\.(\d+))?/.exec(version);
  if (!m) return false;
  const major = Number(m[1]);
  const minor = Number(m[2] ?? '0');
  return major < 2 || (major === 2 && minor === 0);
}

/**
 * The model of a validate, renameblock or previewquery request as a 3.0 model. A model of
 * version 2.0 or older is refused (SPEC.md "Versioning"): 400 MAP_UPGRADE_REQUIRED telling the
 * caller to upgrade it first with …/maps/advanced/upgrade. A newer 2.x model (the original's 2.5
 * export) is upgraded here; a 3.0 model is checked against the schema.
 */
export function requireCurrentModel(body: unknown): MapModel {
  const version = versionOf(body);
  if (version !== undefined && atMost20(version)) {
    throw new FerryError(
      'MAP_UPGRADE_REQUIRED',
      `The Map model is version ${version}: upgrade it first with …/maps/advanced/upgrade (${UPGRADE_PATH}) and send the model it returns.`,
      {
        errors: [
          {
            path: 'body.version',
            message: `version ${version} is 2.0 or older: upgrade it first with …/maps/advanced/upgrade`,
          },
        ],
        details: { version },
      },
    );
  }
  return upgradeMap(body);
}

/** Operation Block kinds whose type changeblocktype changes (SPEC.md "Map"), with CreateWith and UpdateWith. */
export const CHANGEABLE_TYPES: readonly BlockType[] = [
  'Create',
  'Delete',
  'Lookup',
  'Update',
  'UpdateInsert',
  'Upsert',
  'CreateWith',
  'UpdateWith',
];

/** changeblocktype: the Block kind an action makes, and the Connection action it needs. */
const ACTION_TARGETS: Partial<Record<BlockAction, { type: BlockType; needs: ActionName; label: string }>> = {
  Create: { type: 'Create', needs: 'Create', label: 'Create' },
  Update: { type: 'Update', needs: 'Update', label: 'Update' },
  UpdateInsert: { type: 'UpdateInsert', needs: 'UpdateInsert', label: 'Update/Insert' },
  InsertUpdate: { type: 'Upsert', needs: 'Upsert', label: 'Upsert' },
  Delete: { type: 'Delete', needs: 'Delete', label: 'Delete' },
  Query: { type: 'Lookup', needs: 'Query', label: 'Lookup' },
  CreateWith: { type: 'CreateWith', needs: 'Create', label: 'Create With' },
  UpdateWith: { type: 'UpdateWith', needs: 'Update', label: 'Update With' },
};

/** What a Block kind does not use, dropped when a Block changes into it. */
const UNUSED: Partial<
  Record<BlockType, ReadonlyArray<'fieldMappings' | 'useBulk' | 'bulkCountPerOperation' | 'children' | 'cacheResults'>>
> = {
  Lookup: ['fieldMappings', 'useBulk', 'bulkCountPerOperation', 'children'],
  Delete: ['fieldMappings', 'children', 'cacheResults'],
  Create: ['children', 'cacheResults'],
  Update: ['children', 'cacheResults'],
  UpdateInsert: ['children', 'cacheResults'],
  Upsert: ['children', 'cacheResults'],
  CreateWith: ['cacheResults'],
  UpdateWith: ['cacheResults'],
};

/** A name a formula writes without brackets: letters, digits and underscores, not starting with a digit. */
const PLAIN_NAME = /^[\p{L}_][\p{L}\p{N}_]*$/u;

const squash = (s: string): string => s.replace(/[^a-z0-9]/gi, '').toLowerCase();

/**
 * Rewrites the field references `oldName.Field` of a formula to `newName.Field` (the Block part
 * compared ignoring case, as Block names are unique ignoring case). Only field tokens change, so
 * text literals and function names stay as they are; a formula the lexer cannot read is returned
 * unchanged.
 */
export function renameInFormula(text: string, oldName: string, newName: string): string {
  let tokens;
  try {
    tokens = tokenize(text);
  } catch {
    return text;
  }
  const target = oldName.toLowerCase();
  const written = PLAIN_NAME.test(newName) ? newName : `[${newName.replace(/]/g, ']]')}]`;
  let out = text;
  for (const t of [...tokens].reverse()) {
    if (t.kind !== 'field' || t.block?.toLowerCase() !== target) continue;
    const start = t.span.start;
    const rawLength = text.charAt(start) === '[' ? `[${t.block.replace(/]/g, ']]')}]`.length : t.block.length;
    out = out.slice(0, start) + written + out.slice(start + rawLength);
  }
  return out;
}

/** The Block tree with `change` applied to every Block, depth first. */
function mapBlocks(blocks: readonly Block[], change: (b: Block) => Block): Block[] {
  return blocks.map((b) => {
    const c = change(b);
    return {
      ...c,
      ...(c.then ? { then: mapBlocks(c.then, change) } : {}),
      ...(c.else ? { else: mapBlocks(c.else, change) } : {}),
      ...(c.body ? { body: mapBlocks(c.body, change) } : {}),
    };
  });
}

export interface MapEditsOptions {
  readonly db: Kysely<Database>;
  readonly maps: SolutionMaps;
  readonly metadata: ConnectionMetadata;
}

export interface ChangeBlockType {
  readonly blockId: string;
  readonly action: BlockAction;
  readonly operationName: string;
}

export interface RenameBlock {
  readonly blockId: string;
  readonly newName: string;
}

/**
 * Edits of a Map model that answer the changed model without saving it (SPEC.md "Maps":
 * advanced/upgrade, changeblocktype, renameblock): the caller saves it with PUT
 * …/maps/advanced/{mapId}. Each works on the model in the request body, or on the stored Map's
 * latest revision when the body is empty.
 */
export class MapEdits {
  constructor(private readonly opts: MapEditsOptions) {}

  private async solution(orgId: number, solutionId: string): Promise<SolutionRow> {
    const row = await getSolution(this.opts.db, orgId, solutionId);
    if (!row) throw solutionNotFound(orgId, solutionId);
    return row;
  }

  /** The body's model (checked by `parse`), else the stored Map's latest revision. */
  private async modelOf(
    org: OrgRow,
    solution: SolutionRow,
    mapId: number,
    body: unknown,
    parse: (b: unknown) => MapModel,
  ): Promise<MapModel> {
    if (isObj(body) && Object.keys(body).length > 0) return parse(body);
    return (await this.opts.maps.get(org.id, solution.id, mapId)).model;
  }

  /** Upgrades a model to 3.0 without saving it; the Solution must exist. */
  async upgrade(org: OrgRow, solutionId: string, body: unknown): Promise<MapModel> {
    await this.solution(org.id, solutionId);
    return upgradeMap(body);
  }

  /**
   * Changes an operation Block's kind (SPEC.md "changeblocktype"): the new kind derives from
   * `action`, and the pair `action` + `operationName` must be one the Block's Connection lists
   * in its supported actions (its cached metadata; 404 API_METADATA_LOADING while it loads), and
   * the Block's entity must support the action. Fields the new kind does not use are dropped.
   */
  async changeBlockType(
    log: FastifyBaseLogger,
    org: OrgRow,
    solutionId: string,
    mapId: number,
    q: ChangeBlockType,
    body: unknown,
  ): Promise<MapModel> {
    const solution = await this.solution(org.id, solutionId);
    const model = await this.modelOf(org, solution, mapId, body, upgradeMap);
    const block = findBlock(model, q.blockId);
    if (!CHANGEABLE_TYPES.includes(block.blockType)) {
      throw invalid(
        `Block ${block.name} is a ${block.blockType} Block; only operation Blocks change type (${CHANGEABLE_TYPES.join(', ')}).`,
        [{ path: 'querystring.blockId', message: 'not an operation Block' }],
      );
    }
    const target = ACTION_TARGETS[q.action];
    if (!target) {
      throw invalid(
        `The action ${q.action} does not make an operation Block; use one of ${Object.keys(ACTION_TARGETS).join(', ')}.`,
        [{ path: 'querystring.action', message: 'not an operation action' }],
      );
    }
    if (!block.connectionId)
      throw new FerryError(
        'MAP_CONNECTION_NOT_FOUND',
        `Block ${block.name} names no Connection, so the actions it may take are unknown; give it a connectionId first.`,
      );
    const conn = await getConnection(this.opts.db, org.id, block.connectionId);
    if (!conn)
      throw new FerryError(
        'MAP_CONNECTION_NOT_FOUND',
        `The Connection ${block.connectionId} of Block ${block.name} was not found in Organization ${org.id}.`,
      );
    const md = await this.opts.metadata.of(log, org, conn, solution.agentId);
    const pairs = md.actions.map((a) => `${actionOf(a.action)} + ${a.operationName}`).join(', ');
    const supported = md.actions.find((a) => a.action === target.needs);
    if (!supported) {
      throw new FerryError(
        'MAP_ACTION_UNSUPPORTED',
        `The Connection ${conn.name} does not support ${target.needs}, which a ${target.type} Block needs. Its action + operationName pairs: ${pairs || 'none'}.`,
        {
          errors: [{ path: 'querystring.action', message: `not supported by Connection ${conn.name}` }],
        },
      );
    }
    const names = [supported.operationName, target.label, target.type].map(squash);
    if (!names.includes(squash(q.operationName))) {
      throw invalid(
        `The pair ${q.action} + ${q.operationName} is not one Connection ${conn.name} supports; its pairs: ${pairs}.`,
        [
          {
            path: 'querystring.operationName',
            message: `${q.action} goes with the operationName ${supported.operationName}`,
          },
        ],
      );
    }
    const entity = findEntity(md, block.entity);
    if (entity && !entity.actions.some((a) => a.action === target.needs)) {
      throw new FerryError(
        'MAP_ACTION_UNSUPPORTED',
        `The entity ${entity.fullName} of Block ${block.name} does not support ${target.needs}; it supports ${entity.actions.map((a) => a.action).join(', ') || 'nothing'}.`,
        {
          errors: [{ path: 'querystring.action', message: `not supported by entity ${entity.fullName}` }],
        },
      );
    }
    const blocks = mapBlocks(model.blocks, (b) => {
      if (b.blockId !== block.blockId) return b;
      const changed: Block = { ...b, blockType: target.type, action: q.action, operationName: supported.operationName };
      for (const key of UNUSED[target.type] ?? []) delete changed[key];
      return changed;
    });
    return checked({ ...model, blocks });
  }

  /**
   * Renames a Block (SPEC.md "renameblock"). The new name is a plain name (letters, digits and
   * underscores, not starting with a digit; at most 50 characters) that no other Block of the Map
   * has, ignoring case. Every formula of the Map that reads `OldName.Field` then reads
   * `NewName.Field`, and the `source` of For Each, Send Reply and child writes follows too.
   */
  async renameBlock(org: OrgRow, solutionId: string, mapId: number, q: RenameBlock, body: unknown): Promise<MapModel> {
    const solution = await this.solution(org.id, solutionId);
    const model = await this.modelOf(org, solution, mapId, body, requireCurrentModel);
    const block = findBlock(model, q.blockId);
    const newName = q.newName;
    if (!PLAIN_NAME.test(newName) || newName.length > MAX_BLOCK_NAME) {
      throw invalid(
        `The Block name "${newName}" is not valid: use letters, digits and underscores, not starting with a digit, at most ${MAX_BLOCK_NAME} characters.`,
        [{ path: 'querystring.newName', message: 'letters, digits and underscores, not starting with a digit' }],
      );
    }
    const clash = [...walkBlocks(model.blocks)].find(
      (b) => b.blockId !== block.blockId && b.name.toLowerCase() === newName.toLowerCase(),
    );
    if (clash) {
      throw new FerryError(
        'API_DUPLICATE_NAME',
        `The Map already has a Block named ${clash.name} (${clash.blockId}); Block names are unique in a Map, ignoring case.`,
        {
          errors: [{ path: 'querystring.newName', message: 'another Block has this name' }],
        },
      );
    }
    const oldName = block.name;
    const rename = (f: string): string => renameInFormula(f, oldName, newName);
    const isOld = (s: string | undefined): boolean => s !== undefined && s.toLowerCase() === oldName.toLowerCase();
    const blocks = mapBlocks(model.blocks, (b) => {
      const out: Block = { ...b };
      if (b.blockId === block.blockId) out.name = newName;
      if (b.condition !== undefined) out.condition = rename(b.condition);
      if (b.lookupConditions)
        out.lookupConditions = b.lookupConditions.map((c) => ({ ...c, compareValue: rename(c.compareValue) }));
      if (b.fieldMappings)
        out.fieldMappings = b.fieldMappings.map((m) => ({ ...m, targetFormula: rename(m.targetFormula) }));
      if (isOld(b.source)) out.source = newName;
      if (b.children) {
        out.children = b.children.map((c) => {
          const dot = c.source.indexOf('.');
          const head = dot < 0 ? c.source : c.source.slice(0, dot);
          return {
            ...c,
            source: isOld(head) ? newName + c.source.slice(head.length) : c.source,
            fieldMappings: c.fieldMappings.map((m) => ({ ...m, targetFormula: rename(m.targetFormula) })),
          };
        });
      }
      return out;
    });
    return checked({ ...model, blocks });
  }
}

/** The API's action name of a Connection action (the original's InsertUpdate is our Upsert). */
const actionOf = (a: ActionName): string => (a === 'Upsert' ? 'InsertUpdate' : a);

function findBlock(model: MapModel, blockId: string): Block {
  const id = blockId.toLowerCase();
  const block = [...walkBlocks(model.blocks)].find((b) => b.blockId.toLowerCase() === id);
  if (!block)
    throw invalid(`The Map ${model.name} has no Block ${blockId}.`, [
      { path: 'querystring.blockId', message: 'no such Block in the Map' },
    ]);
  return block;
}

/** The edited model, checked against the schema again. */
function checked(model: MapModel): MapModel {
  return upgradeMap(model);
}
