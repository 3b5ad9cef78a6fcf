/**
 * What a Block kind tells the compiler and the runtime about itself. Each
 * `src/maps/blocks/<kind>.block.ts` exports one {@link BlockKind}; `index.ts` collects them by
 * blockType. The schema of a Block stays in `src/protocol/map.ts` (the wire contract).
 *
 *   validate.ts ──checks──▶ kind.connection / entityAction / inLoop / checkEntity / check /
 *                           checkChildren / fields
 *   plan.ts     ──binds───▶ kind.source (the starter) or kind.bind (every other Block)
 *   run.ts      ◀── the plan: the bound Source and Steps (the runtime never looks a kind up)
 */
import type { EntityMetadata, Relationship } from '../../connectors/sdk.js';
import type { ErrorCode } from '../../errors/codes.js';
import type { Block, BlockType } from '../../protocol/map.js';
import type { CompiledFormulas } from '../formula/evaluator.js';
import type { MetadataByConnection } from '../metadata.js';
import type { Source, Step } from '../runtime/context.js';

/** What a name in scope gives the formulas after it. */
export interface ScopeEntry {
  fields: readonly string[];
  /** A write in bulk: its output cannot be read per record. */
  batched: boolean;
  blockType: BlockType;
}

/** What a kind's checks see of the Map, at the Block, in flow order. */
export interface CheckContext {
  readonly metadata: MetadataByConnection;
  /** The Map's first Block. */
  readonly starter: Block | undefined;
  /** The names formulas at this point may read; a kind that binds its name before its own formulas (Loop, For Each Child) sets it here. */
  readonly scope: Map<string, ScopeEntry>;
  /** The entities of the starter's relationships, by `Query.relationship` (childrenKey). */
  readonly children: Map<string, EntityMetadata>;
  /** Reports an error about the Block. */
  error(code: ErrorCode, message: string): void;
  /** Reports a warning about the Block. */
  warning(code: ErrorCode, message: string): void;
  /** Checks a formula of the Block (keyed by where it sits) against `scope`, default the current one. */
  formula(key: string, formula: string, scope?: ReadonlyMap<string, ScopeEntry>): void;
}

/** What a kind's binder gets from the plan. */
export interface BindContext {
  readonly metadata: MetadataByConnection;
  readonly starter: Block;
  readonly starterEntity: EntityMetadata | undefined;
  /** Compiles formulas of the Block (`[key, formula]`) into one program: one sandbox call per batch. */
  compile(block: Block, formulas: ReadonlyArray<readonly [string, string]>): CompiledFormulas;
  /** Binds a nested sequence (then / else / body). */
  steps(blocks: readonly Block[] | undefined): Step[];
}

/**
 * One Block kind. The validator runs the checks of every Block in this order: `inLoop`, the
 * Connection and entity (`connection`, `entityAction`), `checkEntity`, `check`, the Block's
 * formulas, `checkChildren`; then the Block's name enters the scope with its entity's fields (or
 * `fields`).
 */
export interface BlockKind {
  readonly type: BlockType;
  /**
   * What the Block needs of its Connection: `entity`, an entity it reads or writes; `entity-if-named`,
   * an entity only when it names a Connection (the message starters); `native-query`, the
   * Connection alone, whose Connector runs native queries.
   */
  readonly connection?: 'entity' | 'entity-if-named' | 'native-query';
  /** `connection: 'entity'`: the Action the entity must support (Query for the readers). */
  readonly entityAction?: string;
  /** Net change may be set (Query). */
  readonly readsNetChange?: boolean;
  /** `relationships` may be set: children read with each record (Query, Fetch). */
  readonly readsRelationships?: boolean;
  /** Belongs inside a Loop or For Each (Loop Exit, Continue). */
  readonly inLoop?: boolean;
  /** Checks against the Block's entity, after the field checks every entity Block gets. */
  readonly checkEntity?: (block: Block, entity: EntityMetadata, cx: CheckContext) => void;
  /** The kind's own rules (`entity`: the Block's, when it has one and it was found). */
  readonly check?: (block: Block, cx: CheckContext, entity: EntityMetadata | undefined) => void;
  /** After the Block's own formulas: the formulas and targets of its child writes (CreateWith, UpdateWith). */
  readonly checkChildren?: (block: Block, entity: EntityMetadata, cx: CheckContext) => void;
  /** Without an entity: the fields later formulas read under the Block's name (none: the name gives nothing). */
  readonly fields?: (block: Block) => readonly string[] | undefined;
  /** A starter: binds where the run's records come from (`relationships`: the starter's, resolved). */
  readonly source?: (block: Block, relationships: readonly Relationship[]) => Source;
  /** Any other Block: binds its step, compiling its formulas once. */
  readonly bind?: (block: Block, cx: BindContext) => Step;
}
