import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  addSecurityRule,
  modifySecurityRule,
  removeSecurityRule,
  securityRuleOf,
  securityRulesOf,
} from '../../orgs/security-rules.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf } from '../guard.js';
import { toSecurityRule } from '../mappers/org.js';
import { Guid, OrgParams, PageQuery, pageOf, sendCreated, sendList } from '../schemas/common.js';
import { SecurityRule, SecurityRuleInput } from '../schemas/org.schema.js';

const RuleParams = OrgParams.extend({ ruleId: Guid });
const tags = ['Security Rules'];

const securityRulesRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { db } = deps.store;

  app.get(
    '/v1/orgs/:orgId/securityrules',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: 'Security Rules',
        params: OrgParams,
        querystring: PageQuery,
        response: { 200: z.array(SecurityRule) },
      },
    },
    async (req, reply) => {
      const rules = (await securityRulesOf(db, orgOf(req).org.id)).map(toSecurityRule);
      return sendList(reply, pageOf(rules, req.query), rules.length);
    },
  );

  app.post(
    '/v1/orgs/:orgId/securityrules',
    {
      config: { access: 'admin' },
      schema: {
        tags,
        summary: 'Create a Security Rule',
        params: OrgParams,
        body: SecurityRuleInput,
        response: { 201: SecurityRule },
      },
    },
    async (req, reply) => {
      const { org } = orgOf(req);
      const row = await addSecurityRule(db, org.id, req.body);
      return sendCreated(reply, `/v1/orgs/${org.id}/securityrules/${row.id}`, toSecurityRule(row));
    },
  );

  app.get(
    '/v1/orgs/:orgId/securityrules/:ruleId',
    {
      config: { access: 'read' },
      schema: { tags, summary: 'One Security Rule', params: RuleParams, response: { 200: SecurityRule } },
    },
    async (req) => toSecurityRule(await securityRuleOf(db, orgOf(req).org.id, req.params.ruleId)),
  );

  app.put(
    '/v1/orgs/:orgId/securityrules/:ruleId',
    {
      config: { access: 'admin' },
      schema: {
        tags,
        summary: 'Modify a Security Rule',
        params: RuleParams,
        body: SecurityRuleInput,
        response: { 200: SecurityRule },
      },
    },
    async (req) => toSecurityRule(await modifySecurityRule(db, orgOf(req).org.id, req.params.ruleId, req.body, req.ip)),
  );

  app.delete(
    '/v1/orgs/:orgId/securityrules',
    {
      config: { access: 'admin' },
      schema: {
        tags,
        summary: 'Delete a Security Rule (ruleId in the query)',
        params: OrgParams,
        querystring: z.object({ ruleId: Guid }),
        response: { 204: z.null() },
      },
    },
    async (req, reply) => {
      await removeSecurityRule(db, orgOf(req).org.id, req.query.ruleId, req.ip);
      return reply.code(204).send(null);
    },
  );

  app.delete(
    '/v1/orgs/:orgId/securityrules/:ruleId',
    {
      config: { access: 'admin' },
      schema: {
        tags,
        summary: 'Delete a Security Rule (refused when no rule would then let your address in)',
        params: RuleParams,
        response: { 204: z.null() },
      },
    },
    async (req, reply) => {
      await removeSecurityRule(db, orgOf(req).org.id, req.params.ruleId, req.ip);
      return reply.code(204).send(null);
    },
  );
};

export default securityRulesRoutes;
