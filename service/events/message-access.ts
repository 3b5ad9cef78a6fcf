import { createHash, timingSafeEqual } from 'node:crypto';
import { FerryError } from '../../src/errors/ferry-error.js';
import { rangeContains } from '../auth/ip-range.js';
import type { SecretBox } from '../crypto/master-key.js';
import { listRules } from '../store/repos/security-rules.repo.js';
import type { Db } from '../store/sql.js';
import type { SecurityRuleRow } from '../store/schema.js';
import type { AccessCache } from './access-cache.js';

/** Where a message POST stores its messages: the endpoint its URL names, and that endpoint's Solution. */
export interface MessageTarget {
  readonly orgId: number;
  readonly endpointId: number;
  readonly solutionId: string;
  /** The Map that takes them now (null after it was deleted), and the Solution's Agent. */
  readonly mapId: number | null;
  readonly agentId: string | null;
}

/** What a message POST says about itself before its body is read. */
export interface MessageCaller {
  /** The path's `{orgId}` and `{mapId}`, as sent. */
  readonly orgId: string;
  readonly mapId: string;
  /** The Event Solution access token the caller sent; undefined when it sent none. */
  readonly token: string | undefined;
  /** Whether it sent HTTP Basic credentials instead (they are not a substitute). */
  readonly basic: boolean;
  /** The caller's address, as the app's trust-proxy settings read it. */
  readonly ip: string;
  /** A message endpoint (`/messages/`, the default) or a request endpoint (`/requests/`). */
  readonly kind?: 'message' | 'request';
}

/** PostgreSQL's integer: the largest Organization and Map ID. */
const MAX_ID = 2_147_483_647;

const idOf = (raw: string): number | undefined => {
  const n = /^[0-9]{1,10}$/.test(raw) ? Number(raw) : NaN;
  return n >= 1 && n <= MAX_ID ? n : undefined;
};

/**
 * The endpoint a message POST may store on, checked in the order the answers tell the caller the
 * least: the Organization (404), the Event Solution access token (401), the Security Rules with
 * `eventSolutionAccessEnabled` (403: none at all, or none covering the address), the Message
 * Endpoint of the URL's Map ID (404: none is revealed to a caller without the token), and its
 * Solution being enabled (409). Nothing is stored by any of them.
 */
export async function messageTarget(
  db: Db,
  secrets: Pick<SecretBox, 'open'>,
  caller: MessageCaller,
  cache?: AccessCache,
): Promise<MessageTarget> {
  const read = <T>(key: string, load: () => Promise<T>): Promise<T> => (cache ? cache.get(key, load) : load());
  const orgId = idOf(caller.orgId);
  const org =
    orgId === undefined
      ? undefined
      : await read(`org ${orgId}`, () =>
          db.selectFrom('orgs').select(['id', 'eventSolutionAccessToken']).where('id', '=', orgId).executeTakeFirst(),
        );
  if (!org) throw new FerryError('API_NOT_FOUND', `Organization ${caller.orgId.slice(0, 20)} was not found.`);
  checkToken(caller, opened(secrets, org.eventSolutionAccessToken), org.id);
  const rules = await read(`rules ${org.id}`, async () =>
    (await listRules(db, org.id)).filter((r) => r.eventSolutionAccessEnabled === 1),
  );
  checkAddress(rules, org.id, caller.ip);

  const mapId = idOf(caller.mapId);
  const kind = caller.kind ?? 'message';
  const endpoint =
    mapId === undefined
      ? undefined
      : await read(`endpoint ${org.id} ${mapId} ${kind}`, () =>
          db
            .selectFrom('messageEndpoints as e')
            .innerJoin('solutions as s', 's.id', 'e.solutionId')
            .select(['e.id', 'e.solutionId', 'e.mapId', 's.name', 's.isDisabled', 's.agentId'])
            .where('e.orgId', '=', org.id)
            .where('e.urlMapId', '=', mapId)
            .where('e.kind', '=', kind)
            .executeTakeFirst(),
        );
  if (!endpoint) {
    throw new FerryError(
      'API_NOT_FOUND',
      `Organization ${org.id} has no ${caller.kind === 'request' ? 'request' : 'Message'} Endpoint for the Map ID ${caller.mapId.slice(0, 20)}. Send ${caller.kind === 'request' ? 'requests' : 'messages'} to the eventUrl of the Map link; it exists once the Event Solution has been prepared.`,
    );
  }
  if (endpoint.isDisabled === 1) {
    throw new FerryError(
      'EVT_SOLUTION_DISABLED',
      `The Solution "${endpoint.name}" of this Message Endpoint is disabled, so it takes no messages; nothing was stored. Enable the Solution and send them again.`,
    );
  }
  return {
    orgId: org.id,
    endpointId: endpoint.id,
    solutionId: endpoint.solutionId,
    mapId: endpoint.mapId,
    agentId: endpoint.agentId,
  };
}

/** Tokens opened, by their sealed text: a reset seals a new one, so an entry is never stale. */
const OPENED = new WeakMap<Pick<SecretBox, 'open'>, Map<string, string>>();

/** The sealed token opened, once per sealed text (an AES-GCM open on every message POST otherwise). */
function opened(secrets: Pick<SecretBox, 'open'>, sealed: string): string {
  let cache = OPENED.get(secrets);
  if (!cache) OPENED.set(secrets, (cache = new Map()));
  const hit = cache.get(sealed);
  if (hit !== undefined) return hit;
  const token = secrets.open(sealed);
  if (cache.size >= 1000) cache.clear();
  cache.set(sealed, token);
  return token;
}

/** The token compared in constant time (a digest of each, so the lengths do not show either); GUIDs in any case. */
function checkToken(caller: MessageCaller, expected: string, orgId: number): void {
  if (caller.token === undefined || caller.token === '') {
    throw new FerryError(
      'EVT_TOKEN_INVALID',
      caller.basic
        ? "Message endpoints take the Organization's Event Solution access token, not a user's email and password: add ?accesstoken=TOKEN to the URL (or send the header X-Access-Token)."
        : "Send the Organization's Event Solution access token: ?accesstoken=TOKEN in the URL, the header X-Access-Token, or Authorization: Bearer TOKEN.",
    );
  }
  const digest = (s: string) => createHash('sha256').update(s.trim().toLowerCase()).digest();
  if (!timingSafeEqual(digest(caller.token), digest(expected))) {
    throw new FerryError(
      'EVT_TOKEN_INVALID',
      `The access token was refused. The current one is eventSolutionAccessToken in the Security Settings of the Organization (an Administrator reads it with GET /v1/orgs/${orgId}/SecuritySettings); a reset of it ends the old one at once.`,
    );
  }
}

/** A Security Rule with eventSolutionAccessEnabled must cover the address (SPEC.md, Authentication rule 4). */
function checkAddress(rules: readonly SecurityRuleRow[], orgId: number, ip: string): void {
  if (rules.length === 0) {
    throw new FerryError(
      'EVT_NO_EVENT_RULE',
      `Organization ${orgId} has no Security Rule with eventSolutionAccessEnabled, and Event Solutions need at least one: an Administrator adds one for the senders' addresses (POST /v1/orgs/${orgId}/securityrules with "eventSolutionAccessEnabled": true).`,
    );
  }
  if (!rules.some((r) => rangeContains(r.allowedIpRangeStartAddress, r.allowedIpRangeEndAddress, ip))) {
    throw new FerryError(
      'EVT_FORBIDDEN_IP',
      `No Security Rule of Organization ${orgId} with eventSolutionAccessEnabled covers the address ${ip}: an Administrator adds its range, or enables Event Solution access on a rule that covers it.`,
    );
  }
}
