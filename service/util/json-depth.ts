/** Moved to src/util/json-depth.ts: the Agent reads broker messages with the same bound. */
export * from '../../src/util/json-depth.js';
