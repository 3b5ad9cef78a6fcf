import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { createTable, modifyTable, removeTable, tableOf, tablesOf } from '../../lookup-tables/tables.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf, userName } from '../guard.js';
import { sendTablesJson, toLookupTable } from '../mappers/lookup-table.js';
import { OrgParams, sendList } from '../schemas/common.js';
import { LookupTable, LookupTableInput, TableListQuery, TableParams } from '../schemas/lookup-table.schema.js';

const tags = ['Lookup Tables'];

/**
 * Lookup Tables: list, create, get, modify (replaces all values), delete. Tables and their values
 * go out as a JSON stream read a page at a time, and values go in with multi-row INSERTs in one
 * transaction, so a table of 200,000 values is one request each way.
 */
const lookupTablesRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { db } = deps.store;

  app.get(
    '/v1/orgs/:orgId/lookuptables',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: 'Lookup Tables',
        params: OrgParams,
        querystring: TableListQuery,
        response: { 200: z.array(LookupTable) },
      },
    },
    async (req, reply) => {
      const { org } = orgOf(req);
      const { rows, total } = await tablesOf(db, org.id, req.query);
      void reply.header('Total-Count', String(total));
      if (req.query.includeLookupTableValues) return sendTablesJson(reply, db, rows, true);
      return sendList(reply, rows.map(toLookupTable), total);
    },
  );

  app.post(
    '/v1/orgs/:orgId/lookuptables',
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary: 'Create a Lookup Table with its values',
        params: OrgParams,
        body: LookupTableInput,
        response: { 201: LookupTable },
      },
    },
    async (req, reply) => {
      const { org, user } = orgOf(req);
      const row = await createTable(deps.store, org.id, req.body, userName(user));
      void reply.code(201).header('Location', `/v1/orgs/${org.id}/lookuptables/${row.id}`);
      return sendTablesJson(reply, db, [row], false);
    },
  );

  app.get(
    '/v1/orgs/:orgId/lookuptables/:tableId',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: 'One Lookup Table with its values',
        params: TableParams,
        response: { 200: LookupTable },
      },
    },
    async (req, reply) => {
      const row = await tableOf(db, orgOf(req).org.id, req.params.tableId);
      return sendTablesJson(reply, db, [row], false);
    },
  );

  app.put(
    '/v1/orgs/:orgId/lookuptables/:tableId',
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary: 'Modify a Lookup Table; lookupTableValues, when sent, replace all its values',
        params: TableParams,
        body: LookupTableInput,
        response: { 200: LookupTable },
      },
    },
    async (req, reply) => {
      const { org, user } = orgOf(req);
      const row = await modifyTable(deps.store, org.id, req.params.tableId, req.body, userName(user));
      return sendTablesJson(reply, db, [row], false);
    },
  );

  app.delete(
    '/v1/orgs/:orgId/lookuptables/:tableId',
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary: 'Delete a Lookup Table and its values',
        params: TableParams,
        response: { 204: z.null() },
      },
    },
    async (req, reply) => {
      await removeTable(db, orgOf(req).org.id, req.params.tableId);
      return reply.code(204).send(null);
    },
  );
};

export default lookupTablesRoutes;
