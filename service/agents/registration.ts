import { randomBytes, randomUUID } from 'node:crypto';
import { FerryError } from '../../src/errors/ferry-error.js';
import type { RegisterRequest, RegisterResponse } from '../../src/protocol/registration.js';
import {
  bindInstallationKey,
  claimInstallationKey,
  getAgentById,
  getInstallationKey,
  insertAgent,
  insertInstallationKey,
  uniqueAgentName,
  updateAgent,
} from '../store/repos/agents.repo.js';
import { isUniqueViolation, type Db } from '../store/sql.js';
import type { Store } from '../store/store.js';
import { newId } from '../util/values.js';
import { sha256 } from '../auth/password.js';

/** The one name a Cloud Agent has (SPEC.md), and which no On-Premise Agent may take. */
export const CLOUD_AGENT_NAME = 'Cloud Agent';

/** A new Agent secret (32 random bytes, base64url) and the SHA-256 the store keeps. */
export function newAgentSecret(): { secret: string; hash: string } {
  const secret = randomBytes(32).toString('base64url');
  return { secret, hash: sha256(secret) };
}

/**
 * Installation keys: a GUID shown once (SPEC: agentInstallationKey is a GUID), stored as its
 * SHA-256, valid until it expires, and good for one registration.
 */
export async function issueInstallationKey(
  db: Db,
  opts: { orgId: number; ttlSeconds: number; createdBy: string | null; agentId?: string; now?: Date },
): Promise<{ key: string; expiresAt: string }> {
  const now = opts.now ?? new Date();
  const key = randomUUID();
  const expiresAt = new Date(now.getTime() + opts.ttlSeconds * 1000).toISOString();
  await insertInstallationKey(db, {
    keyHash: sha256(key),
    orgId: opts.orgId,
    agentId: opts.agentId ?? null,
    createdBy: opts.createdBy,
    createdAt: now.toISOString(),
    expiresAt,
    usedAt: null,
  });
  return { key, expiresAt };
}

/** How long the key a Cloud Agent installs itself with is valid (it is used at once). */
const CLOUD_AGENT_KEY_TTL_SECONDS = 300;

/** A single-use installation key bound to the Cloud Agent `agentId`, for its Organization. */
export async function issueCloudAgentKey(db: Db, agentId: string): Promise<string> {
  const agent = await getAgentById(db, agentId);
  if (!agent) throw new Error(`Cloud Agent ${agentId} no longer exists`);
  const ttlSeconds = CLOUD_AGENT_KEY_TTL_SECONDS;
  return (await issueInstallationKey(db, { orgId: agent.orgId, agentId, ttlSeconds, createdBy: null })).key;
}

/**
 * `POST /v1/agent/register`: trades an installation key for an Agent identity. A key made for a
 * Cloud Agent (it names the Agent) re-keys that Agent; any other key creates an On-Premise Agent
 * named as asked (default the machine name), numbered when the name is taken.
 */
export async function registerAgent(
  store: Store,
  req: RegisterRequest,
  heartbeatMs: number,
): Promise<RegisterResponse> {
  // Installations on one machine registering at once race for the same numbered name; the loser's
  // transaction rolls back (its key unused again) and tries the next free name.
  for (let attempt = 1; ; attempt++) {
    try {
      return await registerOnce(store, req, heartbeatMs);
    } catch (err) {
      if (!isUniqueViolation(err) || attempt >= 20) throw err;
    }
  }
}

async function registerOnce(store: Store, req: RegisterRequest, heartbeatMs: number): Promise<RegisterResponse> {
  const keyHash = sha256(req.agentInstallationKey.trim());
  const now = new Date().toISOString();
  return store.db.transaction().execute(async (tx) => {
    const key = await getInstallationKey(tx, keyHash);
    if (!key)
      throw new FerryError(
        'AGT_INSTALLATION_KEY_INVALID',
        'The installation key is not valid; provision one with POST /v1/orgs/{orgId}/agents/provision_onpremise_agent.',
      );
    if (key.usedAt !== null) throw usedKey();
    if (key.expiresAt <= now)
      throw new FerryError(
        'AGT_INSTALLATION_KEY_EXPIRED',
        `The installation key expired at ${key.expiresAt}; provision a new one.`,
      );
    if (!(await claimInstallationKey(tx, keyHash, now))) throw usedKey();
    const { secret, hash } = newAgentSecret();

    if (key.agentId !== null) {
      const agent = await getAgentById(tx, key.agentId);
      if (!agent)
        throw new FerryError(
          'AGT_INSTALLATION_KEY_INVALID',
          'The Agent this installation key was made for no longer exists.',
        );
      await updateAgent(tx, agent.id, {
        secretHash: hash,
        fingerprint: req.fingerprint,
        machineName: req.machineName,
        serviceName: req.serviceName,
        version: req.version,
        modifiedAt: now,
      });
      return { agentId: agent.id, agentSecret: secret, orgId: agent.orgId, name: agent.name, heartbeatMs };
    }

    const name = await uniqueAgentName(tx, key.orgId, req.name ?? req.machineName, [CLOUD_AGENT_NAME]);
    const agent = await insertAgent(tx, {
      id: newId(),
      orgId: key.orgId,
      name,
      nameKey: name.toLowerCase(),
      machineName: req.machineName,
      serviceName: req.serviceName,
      isCloudAgent: 0,
      isUpdating: 0,
      status: 'Unknown',
      lastContactTime: null,
      lastShutdownTime: null,
      lastStartTime: null,
      version: req.version,
      installedConnectors: '[]',
      secretHash: hash,
      fingerprint: req.fingerprint,
      createdAt: now,
      modifiedAt: now,
    });
    await bindInstallationKey(tx, keyHash, agent.id);
    return { agentId: agent.id, agentSecret: secret, orgId: agent.orgId, name: agent.name, heartbeatMs };
  });
}

const usedKey = (): FerryError =>
  new FerryError(
    'AGT_INSTALLATION_KEY_USED',
    'The installation key was already used to register an Agent; provision a new key for each installation.',
  );
