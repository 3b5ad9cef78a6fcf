/** Time-ordered GUIDs: shared with the Agent (its failed-record store inserts them in bulk too). */
export { uuidV7 } from '../../src/util/uuid-v7.js';
