/** Agents as the client needs them: the one a command runs through. */
import { z } from 'zod';
import { UsageError } from './errors.js';
import type { ApiClient } from './http.js';

const Agent = z.object({
  id: z.string(),
  name: z.string(),
  isConnected: z.boolean(),
  installedConnectors: z.array(z.object({ connectorId: z.string() })),
});
export type Agent = z.infer<typeof Agent>;

/**
 * The Agent given with --agent (ID or name), else the only connected Agent of the Organization
 * that has the Connector installed.
 */
export async function chooseAgent(
  client: ApiClient,
  orgId: number,
  given: string | undefined,
  connectorId: string,
): Promise<Agent> {
  const agents = await client.call('GET', `/v1/orgs/${orgId}/agents`, z.array(Agent), { query: { limit: 1000 } });
  if (given) {
    const match = agents.filter((a) => a.id.toLowerCase() === given.toLowerCase() || a.name === given);
    if (match.length === 1 && match[0]) return match[0];
    throw new UsageError(
      match.length === 0
        ? `No Agent "${given}" in Organization ${orgId}`
        : `Several Agents are named "${given}": give its ID`,
    );
  }
  const able = agents.filter(
    (a) =>
      a.isConnected && a.installedConnectors.some((c) => c.connectorId.toLowerCase() === connectorId.toLowerCase()),
  );
  if (able.length === 1 && able[0]) return able[0];
  if (able.length === 0)
    throw new UsageError(
      `No connected Agent of Organization ${orgId} has the Connector installed: start one (ferry agent run), or give --agent ID`,
    );
  throw new UsageError(
    `Several connected Agents could run it (${able.map((a) => a.name).join(', ')}): choose one with --agent ID|NAME`,
  );
}
