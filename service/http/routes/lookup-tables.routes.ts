import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { FerryError } from '../../../src/errors/ferry-error.js';
import { countTables, deleteTable, getTable, insertTable, listTables, nameKeyOf, updateTable } from '../../store/repos/lookup-tables.repo.js';
import { deleteAllValues, insertValues } from '../../store/repos/lookup-values.repo.js';
import type { LookupTableRow } from '../../store/schema.js';
import { newId, nowIso } from '../../util/values.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf, userName } from '../guard.js';
import { sendTablesJson, tableNotFound, toLookupTable } from '../lookup-table-model.js';
import { OrgParams, sendList } from '../schemas/common.js';
import { LookupTable, LookupTableInput, TableListQuery, TableParams } from '../schemas/lookup-table.schema.js';

const tags = ['Lookup Tables'];

/**
 * Lookup Tables: list, create, get, modify (replaces all values), delete. Tables and their values
 * go out as a JSON stream read a page at a time, and values go in with multi-row INSERTs in one
 * transaction, so a table of 200,000 values is one request each way.
 */
const lookupTablesRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { db, dialect } = deps.store;

  app.get('/v1/orgs/:orgId/lookuptables', {
    config: { access: 'read' },
    schema: { tags, summary: 'Lookup Tables', params: OrgParams, querystring: TableListQuery, response: { 200: z.array(LookupTable) } },
  }, async (req, reply) => {
    const { org } = orgOf(req);
    const total = await countTables(db, org.id);
    const rows = await listTables(db, org.id, req.query);
    void reply.header('Total-Count', String(total));
    if (req.query.includeLookupTableValues) return sendTablesJson(reply, db, rows, true);
    return sendList(reply, rows.map(toLookupTable), total);
  });

  app.post('/v1/orgs/:orgId/lookuptables', {
    config: { access: 'write' },
    schema: { tags, summary: 'Create a Lookup Table with its values', params: OrgParams, body: LookupTableInput, response: { 201: LookupTable } },
  }, async (req, reply) => {
    const { org, user } = orgOf(req);
    const body = req.body;
    const now = nowIso();
    const row: LookupTableRow = {
      id: newId(),
      orgId: org.id,
      name: body.name,
      nameKey: nameKeyOf(body.name),
      description: body.description ?? null,
      creationDate: now,
      lastModificationDate: now,
      modificationBy: userName(user),
    };
    await db.transaction().execute(async (tx) => {
      await insertTable(tx, row);
      await insertValues(tx, dialect, row.id, 0, body.lookupTableValues ?? [], now);
    });
    void reply.code(201).header('Location', `/v1/orgs/${org.id}/lookuptables/${row.id}`);
    return sendTablesJson(reply, db, [row], false);
  });

  app.get('/v1/orgs/:orgId/lookuptables/:tableId', {
    config: { access: 'read' },
    schema: { tags, summary: 'One Lookup Table with its values', params: TableParams, response: { 200: LookupTable } },
  }, async (req, reply) => {
    const row = await getTable(db, orgOf(req).org.id, req.params.tableId);
    if (!row) throw tableNotFound(req.params.tableId);
    return sendTablesJson(reply, db, [row], false);
  });

  app.put('/v1/orgs/:orgId/lookuptables/:tableId', {
    config: { access: 'write' },
    schema: {
      tags,
      summary: 'Modify a Lookup Table; lookupTableValues, when sent, replace all its values',
      params: TableParams,
      body: LookupTableInput,
      response: { 200: LookupTable },
    },
  }, async (req, reply) => {
    const { org, user } = orgOf(req);
    const id = req.params.tableId.toLowerCase();
    const body = req.body;
    if (body.id && body.id.toLowerCase() !== id) {
      throw new FerryError('API_VALIDATION', 'The Lookup Table ID in the body differs from the one in the path.', { errors: [{ path: 'body.id', message: `must be ${id}` }] });
    }
    const now = nowIso();
    await db.transaction().execute(async (tx) => {
      const found = await updateTable(tx, org.id, id, {
        name: body.name,
        nameKey: nameKeyOf(body.name),
        description: body.description ?? null,
        lastModificationDate: now,
        modificationBy: userName(user),
      });
      if (!found) throw tableNotFound(id);
      if (body.lookupTableValues) {
        await deleteAllValues(tx, id);
        await insertValues(tx, dialect, id, 0, body.lookupTableValues, now);
      }
    });
    const row = await getTable(db, org.id, id);
    if (!row) throw tableNotFound(id);
    return sendTablesJson(reply, db, [row], false);
  });

  app.delete('/v1/orgs/:orgId/lookuptables/:tableId', {
    config: { access: 'write' },
    schema: { tags, summary: 'Delete a Lookup Table and its values', params: TableParams, response: { 204: z.null() } },
  }, async (req, reply) => {
    const { org } = orgOf(req);
    const id = req.params.tableId.toLowerCase();
    const deleted = await db.transaction().execute((tx) => deleteTable(tx, org.id, id));
    if (!deleted) throw tableNotFound(id);
    return reply.code(204).send(null);
  });
};

export default lookupTablesRoutes;
