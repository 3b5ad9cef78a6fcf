import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { addValue, lookupValue, modifyValue, removeValue, valueOf, valuesOf } from '../../lookup-tables/values.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf, userName } from '../guard.js';
import { toLookupTableValue } from '../mappers/lookup-table.js';
import { PageQuery, sendCreated, sendList } from '../schemas/common.js';
import {
  LookupTableValue,
  LookupTableValueInput,
  TableParams,
  Value1LookupParams,
  Value2LookupParams,
  ValueParams,
} from '../schemas/lookup-table.schema.js';

const tags = ['Lookup Tables'];

/** Lookup Table values one at a time, and the two lookups by table ID or name. */
const lookupValuesRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { db } = deps.store;

  app.get(
    '/v1/orgs/:orgId/lookuptables/:tableId/values',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: 'Values of a Lookup Table, in insertion order',
        params: TableParams,
        querystring: PageQuery,
        response: { 200: z.array(LookupTableValue) },
      },
    },
    async (req, reply) => {
      const { rows, total } = await valuesOf(db, orgOf(req).org.id, req.params.tableId, req.query);
      return sendList(reply, rows.map(toLookupTableValue), total);
    },
  );

  app.post(
    '/v1/orgs/:orgId/lookuptables/:tableId/values',
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary: 'Add a value to a Lookup Table',
        params: TableParams,
        body: LookupTableValueInput,
        response: { 201: LookupTableValue },
      },
    },
    async (req, reply) => {
      const { org, user } = orgOf(req);
      const tableId = req.params.tableId.toLowerCase();
      const row = await addValue(db, org.id, tableId, req.body, userName(user));
      return sendCreated(reply, `/v1/orgs/${org.id}/lookuptables/${tableId}/values/${row.id}`, toLookupTableValue(row));
    },
  );

  app.get(
    '/v1/orgs/:orgId/lookuptables/:tableId/values/:valueId',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: 'One value of a Lookup Table',
        params: ValueParams,
        response: { 200: LookupTableValue },
      },
    },
    async (req) => toLookupTableValue(await valueOf(db, orgOf(req).org.id, req.params.tableId, req.params.valueId)),
  );

  app.put(
    '/v1/orgs/:orgId/lookuptables/:tableId/values/:valueId',
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary: 'Modify a value of a Lookup Table',
        params: ValueParams,
        body: LookupTableValueInput,
        response: { 200: LookupTableValue },
      },
    },
    async (req) => {
      const { org, user } = orgOf(req);
      return toLookupTableValue(
        await modifyValue(db, org.id, req.params.tableId, req.params.valueId, req.body, userName(user)),
      );
    },
  );

  app.delete(
    '/v1/orgs/:orgId/lookuptables/:tableId/values/:valueId',
    {
      config: { access: 'write' },
      schema: { tags, summary: 'Delete a value of a Lookup Table', params: ValueParams, response: { 204: z.null() } },
    },
    async (req, reply) => {
      const { org, user } = orgOf(req);
      await removeValue(db, org.id, req.params.tableId, req.params.valueId, userName(user));
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/v1/orgs/:orgId/lookuptables/:tableIdOrName/values/value1/:value2',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: 'value1 for a value2: the matching value (the first by value1 in code-point order when several match)',
        params: Value1LookupParams,
        response: { 200: LookupTableValue },
      },
    },
    async (req) =>
      toLookupTableValue(
        await lookupValue(db, orgOf(req).org.id, req.params.tableIdOrName, 'value2', req.params.value2),
      ),
  );

  app.get(
    '/v1/orgs/:orgId/lookuptables/:tableIdOrName/values/value2/:value1',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: 'value2 for a value1: the matching value (the first by value2 in code-point order when several match)',
        params: Value2LookupParams,
        response: { 200: LookupTableValue },
      },
    },
    async (req) =>
      toLookupTableValue(
        await lookupValue(db, orgOf(req).org.id, req.params.tableIdOrName, 'value1', req.params.value1),
      ),
  );
};

export default lookupValuesRoutes;
