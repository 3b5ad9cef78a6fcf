import { timingSafeEqual } from 'node:crypto';
import { getAgentById } from '../store/repos/agents.repo.js';
import type { Db } from '../store/sql.js';
import type { AgentRow } from '../store/schema.js';
import { sha256 } from './password.js';

const BEARER_RE = /^Bearer\s+([A-Za-z0-9-]{1,100})\.([A-Za-z0-9_-]{1,200})$/i;

/**
 * The Agent of an `Authorization: Bearer <agentId>.<secret>` header (the channel upgrade and
 * the log upload), or undefined when the header is missing, malformed or wrong.
 */
export async function authenticateAgent(db: Db, authorization: string | undefined): Promise<AgentRow | undefined> {
  const m = BEARER_RE.exec(authorization ?? '');
  if (!m?.[1] || !m[2]) return undefined;
  const agent = await getAgentById(db, m[1].toLowerCase());
  return agent && secretMatches(m[2], agent.secretHash) ? agent : undefined;
}

/** Constant-time comparison of a presented secret with the stored SHA-256. */
export function secretMatches(secret: string, storedHash: string | null): boolean {
  if (!storedHash) return false;
  const a = Buffer.from(sha256(secret), 'hex');
  const b = Buffer.from(storedHash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}
