import type { ServiceRequest } from '../../src/protocol/channel.js';
import { FerryError } from '../../src/errors/ferry-error.js';

/** A command to an Agent, without its message ID (the bus assigns one). */
export type AgentCommand = ServiceRequest extends infer R ? (R extends { id: string } ? Omit<R, 'id'> : never) : never;

/** AGT_NOT_CONNECTED for `agentId`: it has no channel, or the channel closed before the reply. */
export const notConnected = (agentId: string, detail = 'is not connected'): FerryError =>
  new FerryError('AGT_NOT_CONNECTED', `Agent ${agentId} ${detail}; start it (or wait until its status is Running) and try again.`, { details: { agentId } });
