/** What scenarios 1–4 share: the Service, the Agent, the data and the Connections, and the Maps they build. */
import type { ServiceUnderTest } from '../../e2e/agent/harness.js';
import type { Agent } from './agents.js';
import type { ChildConfig } from './anchors.js';
import type { Data } from './data.js';
import { pgExec } from './postgres.js';
import { api } from './service.js';
import { BATCH } from './settings.js';

export interface Ctx {
  sut: ServiceUnderTest;
  agent: Agent;
  data: Data;
  pgUrl: string;
  csvConn: string;
  pgConn: string;
}

export const S_OF = (ctx: Ctx, id: string): string => `/v1/orgs/${ctx.sut.orgId}/solutions/${id}`;

export async function createSolution(ctx: Ctx, body: Record<string, unknown>): Promise<string> {
  return (
    await api<{ id: string }>(ctx.sut, 'POST', `/v1/orgs/${ctx.sut.orgId}/solutions`, {
      agentId: ctx.agent.agentId,
      ...body,
    })
  ).body.id;
}

export const block = (n: number): string => `5e1f0000-0000-4000-8000-${String(n).padStart(12, '0')}`;

/** Query the CSV entity → Create into the table, every mapping a plain field copy. */
export function copyMap(
  name: string,
  csvConn: string,
  entity: string,
  pgConn: string,
  table: string,
  fields: readonly string[],
): Record<string, unknown> {
  return {
    version: '3.0',
    name,
    batchSize: BATCH,
    blocks: [
      { blockId: block(1), name: 'Q', blockType: 'Query', action: 'Query', connectionId: csvConn, entity },
      {
        blockId: block(2),
        name: 'W',
        blockType: 'Create',
        action: 'Create',
        connectionId: pgConn,
        entity: table,
        fieldMappings: fields.map((f) => ({ targetField: f, targetFormula: `Q.${f}` })),
      },
    ],
  };
}

/** The same Map for the engine child: the Connections' ids and their plain properties. */
export function engineConfig(ctx: Ctx, map: Record<string, unknown>): ChildConfig {
  return {
    map,
    connections: {
      [ctx.csvConn]: { connector: 'CSV', properties: { folder: ctx.data.csvFolder } },
      [ctx.pgConn]: { connector: 'PostgreSQL', properties: { connectionString: ctx.pgUrl, schemas: 'public' } },
    },
  };
}

export const checkpoint = (ctx: Ctx): Promise<void> => pgExec(ctx.pgUrl, 'CHECKPOINT');

export interface Step {
  ms: number;
  rowsPerSec: number;
  [k: string]: unknown;
}
