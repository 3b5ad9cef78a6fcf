/** Moved to src/util/message-body.ts: the Agent reads broker deliveries by the same rules. */
export * from '../../src/util/message-body.js';
