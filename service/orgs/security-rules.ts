import { FerryError, type FieldError } from '../../src/errors/ferry-error.js';
import { rangeContains, validateRange } from '../auth/ip-range.js';
import {
  deleteRule,
  getRule,
  insertRule,
  listRules,
  ruleExists,
  updateRule,
  type SecurityRuleInput as RuleRow,
} from '../store/repos/security-rules.repo.js';
import type { SecurityRuleRow } from '../store/schema.js';
import type { Db } from '../store/sql.js';
import { newId, nowIso, toFlag } from '../util/values.js';

/** A Security Rule as a client submits it; `id` absent = a new rule. */
export interface SecurityRuleSpec {
  id?: string | undefined;
  name: string;
  allowedIpRangeStartAddress: string;
  allowedIpRangeEndAddress: string;
  apiAccessEnabled: boolean;
  eventSolutionAccessEnabled: boolean;
}

type RangeOfRule = Pick<
  SecurityRuleRow,
  'apiAccessEnabled' | 'allowedIpRangeStartAddress' | 'allowedIpRangeEndAddress'
>;

/** Checks rules as submitted: valid ranges of one family, start not after end, no repeated IDs. */
export function checkRules(rules: readonly SecurityRuleSpec[], base: string): RuleRow[] {
  const errors: FieldError[] = [];
  const ids = new Set<string>();
  rules.forEach((r, i) => {
    errors.push(...validateRange(r.allowedIpRangeStartAddress, r.allowedIpRangeEndAddress, `${base}${i}.`));
    if (r.id) {
      const key = r.id.toLowerCase();
      if (ids.has(key)) errors.push({ path: `${base}${i}.id`, message: `the rule ID ${r.id} appears more than once` });
      ids.add(key);
    }
  });
  if (errors.length) {
    throw new FerryError(
      'API_INVALID_IP_RANGE',
      `The Security Rules are not valid: ${errors[0]?.path}: ${errors[0]?.message}`,
      { errors },
    );
  }
  return rules.map((r) => ({
    id: r.id?.toLowerCase() ?? newId(),
    name: r.name,
    allowedIpRangeStartAddress: r.allowedIpRangeStartAddress,
    allowedIpRangeEndAddress: r.allowedIpRangeEndAddress,
    apiAccessEnabled: toFlag(r.apiAccessEnabled),
    eventSolutionAccessEnabled: toFlag(r.eventSolutionAccessEnabled),
  }));
}

/** Whether one of the rules with apiAccessEnabled covers the address. */
export function opensApiTo(rules: readonly RangeOfRule[], ip: string): boolean {
  return rules.some(
    (r) => r.apiAccessEnabled === 1 && rangeContains(r.allowedIpRangeStartAddress, r.allowedIpRangeEndAddress, ip),
  );
}

/** Whether a Security Rule of the Organization with apiAccessEnabled covers the address. */
export async function apiOpenTo(db: Db, orgId: number, ip: string): Promise<boolean> {
  return opensApiTo(await listRules(db, orgId), ip);
}

/** Refuses a change after which no rule would let the caller's own address reach the API. */
function keepCallerIn(rules: readonly RangeOfRule[], ip: string): void {
  if (!opensApiTo(rules, ip)) {
    throw new FerryError(
      'API_CONFLICT',
      `This change would shut your own address ${ip} out of the API; keep a rule with apiAccessEnabled that covers it.`,
    );
  }
}

const ruleNotFound = (id: string): FerryError => new FerryError('API_NOT_FOUND', `Security Rule ${id} was not found.`);

export async function securityRulesOf(db: Db, orgId: number): Promise<SecurityRuleRow[]> {
  return listRules(db, orgId);
}

/** One rule of the Organization; 404 when it has none with this ID. */
export async function securityRuleOf(db: Db, orgId: number, ruleId: string): Promise<SecurityRuleRow> {
  const row = await getRule(db, orgId, ruleId.toLowerCase());
  if (!row) throw ruleNotFound(ruleId);
  return row;
}

/** Adds a rule; its ID, when given, must not be any Organization's rule already. */
export async function addSecurityRule(db: Db, orgId: number, spec: SecurityRuleSpec): Promise<SecurityRuleRow> {
  const [rule] = checkRules([spec], 'body.');
  if (!rule) throw new FerryError('SVC_INTERNAL', 'checkRules returned nothing');
  if (await ruleExists(db, rule.id))
    throw new FerryError('API_CONFLICT', `A Security Rule with ID ${rule.id} already exists.`);
  return insertRule(db, orgId, rule, nowIso());
}

/**
 * Changes a rule. The ID in the spec, when given, must be the path's; after the change a rule must
 * still open the API to `callerIp`.
 */
export async function modifySecurityRule(
  db: Db,
  orgId: number,
  ruleId: string,
  spec: SecurityRuleSpec,
  callerIp: string,
): Promise<SecurityRuleRow> {
  const id = ruleId.toLowerCase();
  if (spec.id && spec.id.toLowerCase() !== id) {
    throw new FerryError('API_VALIDATION', 'The rule ID in the body differs from the one in the path.', {
      errors: [{ path: 'body.id', message: `must be ${id}` }],
    });
  }
  const [rule] = checkRules([{ ...spec, id }], 'body.');
  if (!rule) throw new FerryError('SVC_INTERNAL', 'checkRules returned nothing');
  const current = await listRules(db, orgId);
  if (!current.some((r) => r.id === id)) throw ruleNotFound(id);
  keepCallerIn(
    current.map((r) => (r.id === id ? rule : r)),
    callerIp,
  );
  const { id: _id, ...changes } = rule;
  await updateRule(db, orgId, id, changes);
  const row = await getRule(db, orgId, id);
  if (!row) throw ruleNotFound(id);
  return row;
}

/** Deletes a rule, unless no rule would then open the API to `callerIp`. */
export async function removeSecurityRule(db: Db, orgId: number, ruleId: string, callerIp: string): Promise<void> {
  const id = ruleId.toLowerCase();
  const current = await listRules(db, orgId);
  if (!current.some((r) => r.id === id)) throw ruleNotFound(id);
  keepCallerIn(
    current.filter((r) => r.id !== id),
    callerIp,
  );
  await deleteRule(db, orgId, id);
}
