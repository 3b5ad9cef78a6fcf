import { Readable } from 'node:stream';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { findTable } from '../../store/repos/lookup-tables.repo.js';
import { pairPages } from '../../store/repos/lookup-values.repo.js';
import type { Db } from '../../store/sql.js';
import { agentBearer } from '../agent-bearer.js';
import type { ServiceDeps } from '../deps.js';

/**
 * The Lookup Tables a Solution run reads, for its Agent (bearer credentials): `{"tables": [{id,
 * name, values: [[value1, value2], …]}, …]}`, streamed a page at a time so a large table is never
 * held whole. Names that match no table of the Agent's Organization are left out (a lookup in
 * them fails per record with MAP_LOOKUP_TABLE_NOT_FOUND, as in any run).
 */
const agentLookupTablesRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { db } = deps.store;
  const bearer = agentBearer(db);
  app.get(
    '/v1/agent/lookuptables',
    {
      config: { access: 'public' },
      onRequest: bearer.onRequest,
      schema: {
        tags: ['Agent protocol'],
        summary:
          'An Agent reads the Lookup Tables of its Organization that a run uses (names comma-separated), streamed',
        querystring: z.object({ names: z.string().max(20_000) }),
      },
    },
    async (req, reply) => {
      const agent = bearer.agentOf(req);
      const names = req.query.names
        .split(',')
        .map((n) => n.trim())
        .filter((n) => n !== '');
      void reply.type('application/json');
      return reply.send(Readable.from(tablesJson(db, agent.orgId, names)));
    },
  );
};

async function* tablesJson(db: Db, orgId: number, names: readonly string[]): AsyncGenerator<string> {
  yield '{"tables":[';
  const seen = new Set<string>();
  let first = true;
  for (const name of names) {
    const row = await findTable(db, orgId, name);
    if (!row || seen.has(row.id)) continue;
    seen.add(row.id);
    yield `${first ? '' : ','}{"id":${JSON.stringify(row.id)},"name":${JSON.stringify(row.name)},"values":[`;
    first = false;
    let firstPair = true;
    for await (const page of pairPages(db, row.id)) {
      if (page.length === 0) continue;
      yield (firstPair ? '' : ',') + page.map((p) => JSON.stringify([p.value1, p.value2])).join(',');
      firstPair = false;
    }
    yield ']}';
  }
  yield ']}';
}

export default agentLookupTablesRoutes;
