import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { FerryError } from '../../../src/errors/ferry-error.js';
import { findTable, getTable, updateTable } from '../../store/repos/lookup-tables.repo.js';
import { countValues, deleteValue, findPair, getValue, insertValue, listValues, updateValue } from '../../store/repos/lookup-values.repo.js';
import type { Db } from '../../store/sql.js';
import type { UserRow } from '../../store/schema.js';
import { nowIso } from '../../util/values.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf, userName } from '../guard.js';
import { tableNotFound, toLookupTableValue } from '../lookup-table-model.js';
import { PageQuery, sendCreated, sendList } from '../schemas/common.js';
import { LookupTableValue, LookupTableValueInput, TableParams, Value1LookupParams, Value2LookupParams, ValueParams } from '../schemas/lookup-table.schema.js';

const tags = ['Lookup Tables'];

const valueNotFound = (tableId: string, id: string): FerryError => new FerryError('API_NOT_FOUND', `Lookup Table ${tableId} has no value ${id}.`);

/**
 * Stamps the table as modified by the caller, inside the transaction that changes one of its
 * values (on PostgreSQL the row lock also orders concurrent appends). 404 when it does not exist.
 */
async function touchTable(tx: Db, orgId: number, tableId: string, user: UserRow, now: string): Promise<void> {
  if (!(await updateTable(tx, orgId, tableId, { lastModificationDate: now, modificationBy: userName(user) }))) throw tableNotFound(tableId);
}

/** Lookup Table values one at a time, and the two lookups by table ID or name. */
const lookupValuesRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { db } = deps.store;

  app.get('/v1/orgs/:orgId/lookuptables/:tableId/values', {
    config: { access: 'read' },
    schema: { tags, summary: 'Values of a Lookup Table, in insertion order', params: TableParams, querystring: PageQuery, response: { 200: z.array(LookupTableValue) } },
  }, async (req, reply) => {
    const table = await getTable(db, orgOf(req).org.id, req.params.tableId);
    if (!table) throw tableNotFound(req.params.tableId);
    const [total, rows] = await Promise.all([countValues(db, table.id), listValues(db, table.id, req.query)]);
    return sendList(reply, rows.map(toLookupTableValue), total);
  });

  app.post('/v1/orgs/:orgId/lookuptables/:tableId/values', {
    config: { access: 'write' },
    schema: { tags, summary: 'Add a value to a Lookup Table', params: TableParams, body: LookupTableValueInput, response: { 201: LookupTableValue } },
  }, async (req, reply) => {
    const { org, user } = orgOf(req);
    const tableId = req.params.tableId.toLowerCase();
    const now = nowIso();
    const row = await db.transaction().execute(async (tx) => {
      await touchTable(tx, org.id, tableId, user, now);
      return insertValue(tx, tableId, req.body, now);
    });
    return sendCreated(reply, `/v1/orgs/${org.id}/lookuptables/${tableId}/values/${row.id}`, toLookupTableValue(row));
  });

  app.get('/v1/orgs/:orgId/lookuptables/:tableId/values/:valueId', {
    config: { access: 'read' },
    schema: { tags, summary: 'One value of a Lookup Table', params: ValueParams, response: { 200: LookupTableValue } },
  }, async (req) => {
    const table = await getTable(db, orgOf(req).org.id, req.params.tableId);
    if (!table) throw tableNotFound(req.params.tableId);
    const row = await getValue(db, table.id, req.params.valueId.toLowerCase());
    if (!row) throw valueNotFound(table.id, req.params.valueId);
    return toLookupTableValue(row);
  });

  app.put('/v1/orgs/:orgId/lookuptables/:tableId/values/:valueId', {
    config: { access: 'write' },
    schema: { tags, summary: 'Modify a value of a Lookup Table', params: ValueParams, body: LookupTableValueInput, response: { 200: LookupTableValue } },
  }, async (req) => {
    const { org, user } = orgOf(req);
    const tableId = req.params.tableId.toLowerCase();
    const id = req.params.valueId.toLowerCase();
    if (req.body.id && req.body.id.toLowerCase() !== id) {
      throw new FerryError('API_VALIDATION', 'The value ID in the body differs from the one in the path.', { errors: [{ path: 'body.id', message: `must be ${id}` }] });
    }
    const now = nowIso();
    const row = await db.transaction().execute(async (tx) => {
      await touchTable(tx, org.id, tableId, user, now);
      if (!(await updateValue(tx, tableId, id, { value1: req.body.value1, value2: req.body.value2, lastModificationDate: now }))) throw valueNotFound(tableId, id);
      return getValue(tx, tableId, id);
    });
    if (!row) throw valueNotFound(tableId, id);
    return toLookupTableValue(row);
  });

  app.delete('/v1/orgs/:orgId/lookuptables/:tableId/values/:valueId', {
    config: { access: 'write' },
    schema: { tags, summary: 'Delete a value of a Lookup Table', params: ValueParams, response: { 204: z.null() } },
  }, async (req, reply) => {
    const { org, user } = orgOf(req);
    const tableId = req.params.tableId.toLowerCase();
    const id = req.params.valueId.toLowerCase();
    await db.transaction().execute(async (tx) => {
      await touchTable(tx, org.id, tableId, user, nowIso());
      if (!(await deleteValue(tx, tableId, id))) throw valueNotFound(tableId, id);
    });
    return reply.code(204).send(null);
  });

  /** Both lookups: the pair whose `by` value matches; with duplicates, the first by the other value in code-point order. */
  async function lookup(orgId: number, tableIdOrName: string, by: 'value1' | 'value2', value: string) {
    const table = await findTable(db, orgId, tableIdOrName);
    if (!table) throw new FerryError('API_NOT_FOUND', `Lookup Table "${tableIdOrName}" was not found (neither an ID nor a name in this Organization).`);
    const row = await findPair(db, table.id, by, value);
    if (!row) throw new FerryError('API_NOT_FOUND', `Lookup Table "${table.name}" has no value with ${by} "${value}".`);
    return toLookupTableValue(row);
  }

  app.get('/v1/orgs/:orgId/lookuptables/:tableIdOrName/values/value1/:value2', {
    config: { access: 'read' },
    schema: {
      tags,
      summary: 'value1 for a value2: the matching value (the first by value1 in code-point order when several match)',
      params: Value1LookupParams,
      response: { 200: LookupTableValue },
    },
  }, async (req) => lookup(orgOf(req).org.id, req.params.tableIdOrName, 'value2', req.params.value2));

  app.get('/v1/orgs/:orgId/lookuptables/:tableIdOrName/values/value2/:value1', {
    config: { access: 'read' },
    schema: {
      tags,
      summary: 'value2 for a value1: the matching value (the first by value2 in code-point order when several match)',
      params: Value2LookupParams,
      response: { 200: LookupTableValue },
    },
  }, async (req) => lookup(orgOf(req).org.id, req.params.tableIdOrName, 'value1', req.params.value1));
};

export default lookupValuesRoutes;
