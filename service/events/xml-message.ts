/** Moved to src/util/xml-message.ts: the Agent reads XML messages from brokers the same way. */
export * from '../../src/util/xml-message.js';
