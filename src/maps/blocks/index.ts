/**
 * The Block registry: every Block kind this Agent version runs, by blockType (registry.ts says
 * what a kind holds). A new kind is one `<kind>.block.ts` exporting its {@link BlockKind}, added
 * here; `create.block.ts` is the one to imitate for a write, `if-else.block.ts` for a control
 * Block, `query.block.ts` for a starter.
 */
import type { BlockType } from '../../protocol/map.js';
import { buildReplyKind } from './build-reply.block.js';
import { continueKind } from './continue.block.js';
import { createWithKind } from './create-with.block.js';
import { createKind } from './create.block.js';
import { deleteKind } from './delete.block.js';
import { fetchKind } from './fetch.block.js';
import { forEachChildKind } from './for-each-child.block.js';
import { forEachResultKind } from './for-each-result.block.js';
import { ifElseKind } from './if-else.block.js';
import { lookupKind } from './lookup.block.js';
import { loopExitKind } from './loop-exit.block.js';
import { loopKind } from './loop.block.js';
import { mapExitKind } from './map-exit.block.js';
import { nativeQueryKind } from './native-query.block.js';
import { queryKind } from './query.block.js';
import type { BlockKind } from './registry.js';
import { sendReplyKind } from './send-reply.block.js';
import { updateInsertKind } from './update-insert.block.js';
import { updateWithKind } from './update-with.block.js';
import { updateKind } from './update.block.js';
import { upsertKind } from './upsert.block.js';
import { waitForMessageKind } from './wait-for-message.block.js';
import { waitForRequestKind } from './wait-for-request.block.js';

export type { BindContext, BlockKind, CheckContext, ScopeEntry } from './registry.js';
export { writesInBulk } from './write.js';

/** Every Block kind by blockType. */
export const BLOCK_KINDS: Readonly<Record<BlockType, BlockKind>> = {
  Query: queryKind,
  Fetch: fetchKind,
  NativeQuery: nativeQueryKind,
  WaitForMessage: waitForMessageKind,
  ForEachResult: forEachResultKind,
  ForEachChild: forEachChildKind,
  IfElse: ifElseKind,
  Loop: loopKind,
  LoopExit: loopExitKind,
  Continue: continueKind,
  MapExit: mapExitKind,
  Lookup: lookupKind,
  Create: createKind,
  Update: updateKind,
  UpdateInsert: updateInsertKind,
  Upsert: upsertKind,
  Delete: deleteKind,
  CreateWith: createWithKind,
  UpdateWith: updateWithKind,
  WaitForRequest: waitForRequestKind,
  BuildReply: buildReplyKind,
  SendReply: sendReplyKind,
};

/** The kind of a blockType. */
export const kindOf = (t: BlockType): BlockKind => BLOCK_KINDS[t];
