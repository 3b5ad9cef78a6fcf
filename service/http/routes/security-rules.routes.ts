import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { FerryError } from '../../../src/errors/ferry-error.js';
import { rangeContains } from '../../auth/ip-range.js';
import { deleteRule, getRule, insertRule, listRules, ruleExists, updateRule } from '../../store/repos/security-rules.repo.js';
import { nowIso } from '../../util/values.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf } from '../guard.js';
import { checkRules, toSecurityRule } from '../org-model.js';
import { Guid, OrgParams, PageQuery, pageOf, sendCreated, sendList } from '../schemas/common.js';
import { SecurityRule, SecurityRuleInput } from '../schemas/org.schema.js';
import type { SecurityRuleRow } from '../../store/schema.js';

const RuleParams = OrgParams.extend({ ruleId: Guid });
const tags = ['Security Rules'];

/** Refuses a change after which no rule would let the caller's own address reach the API. */
function keepCallerIn(rules: Array<Pick<SecurityRuleRow, 'apiAccessEnabled' | 'allowedIpRangeStartAddress' | 'allowedIpRangeEndAddress'>>, ip: string): void {
  if (!rules.some((r) => r.apiAccessEnabled === 1 && rangeContains(r.allowedIpRangeStartAddress, r.allowedIpRangeEndAddress, ip))) {
    throw new FerryError('API_CONFLICT', `This change would shut your own address ${ip} out of the API; keep a rule with apiAccessEnabled that covers it.`);
  }
}

const securityRulesRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { db } = deps.store;

  app.get('/v1/orgs/:orgId/securityrules', {
    config: { access: 'read' },
    schema: { tags, summary: 'Security Rules', params: OrgParams, querystring: PageQuery, response: { 200: z.array(SecurityRule) } },
  }, async (req, reply) => {
    const rules = (await listRules(db, orgOf(req).org.id)).map(toSecurityRule);
    return sendList(reply, pageOf(rules, req.query), rules.length);
  });

  app.post('/v1/orgs/:orgId/securityrules', {
    config: { access: 'admin' },
    schema: { tags, summary: 'Create a Security Rule', params: OrgParams, body: SecurityRuleInput, response: { 201: SecurityRule } },
  }, async (req, reply) => {
    const { org } = orgOf(req);
    const [rule] = checkRules([req.body], 'body.');
    if (!rule) throw new FerryError('SVC_INTERNAL', 'checkRules returned nothing');
    if (await ruleExists(db, rule.id)) throw new FerryError('API_CONFLICT', `A Security Rule with ID ${rule.id} already exists.`);
    const row = await insertRule(db, org.id, rule, nowIso());
    return sendCreated(reply, `/v1/orgs/${org.id}/securityrules/${row.id}`, toSecurityRule(row));
  });

  app.get('/v1/orgs/:orgId/securityrules/:ruleId', {
    config: { access: 'read' },
    schema: { tags, summary: 'One Security Rule', params: RuleParams, response: { 200: SecurityRule } },
  }, async (req) => {
    const row = await getRule(db, orgOf(req).org.id, req.params.ruleId.toLowerCase());
    if (!row) throw new FerryError('API_NOT_FOUND', `Security Rule ${req.params.ruleId} was not found.`);
    return toSecurityRule(row);
  });

  app.put('/v1/orgs/:orgId/securityrules/:ruleId', {
    config: { access: 'admin' },
    schema: { tags, summary: 'Modify a Security Rule', params: RuleParams, body: SecurityRuleInput, response: { 200: SecurityRule } },
  }, async (req) => {
    const { org } = orgOf(req);
    const id = req.params.ruleId.toLowerCase();
    if (req.body.id && req.body.id.toLowerCase() !== id) {
      throw new FerryError('API_VALIDATION', 'The rule ID in the body differs from the one in the path.', { errors: [{ path: 'body.id', message: `must be ${id}` }] });
    }
    const [rule] = checkRules([{ ...req.body, id }], 'body.');
    if (!rule) throw new FerryError('SVC_INTERNAL', 'checkRules returned nothing');
    const current = await listRules(db, org.id);
    if (!current.some((r) => r.id === id)) throw new FerryError('API_NOT_FOUND', `Security Rule ${id} was not found.`);
    keepCallerIn(current.map((r) => (r.id === id ? rule : r)), req.ip);
    const { id: _id, ...changes } = rule;
    await updateRule(db, org.id, id, changes);
    const row = await getRule(db, org.id, id);
    if (!row) throw new FerryError('API_NOT_FOUND', `Security Rule ${id} was not found.`);
    return toSecurityRule(row);
  });

  app.delete('/v1/orgs/:orgId/securityrules', {
    config: { access: 'admin' },
    schema: { tags, summary: 'Delete a Security Rule (ruleId in the query)', params: OrgParams, querystring: z.object({ ruleId: Guid }), response: { 204: z.null() } },
  }, async (req, reply) => {
    const { org } = orgOf(req);
    const id = req.query.ruleId.toLowerCase();
    const current = await listRules(db, org.id);
    if (!current.some((r) => r.id === id)) throw new FerryError('API_NOT_FOUND', `Security Rule ${id} was not found.`);
    keepCallerIn(current.filter((r) => r.id !== id), req.ip);
    await deleteRule(db, org.id, id);
    return reply.code(204).send(null);
  });
};

export default securityRulesRoutes;
