import { createHash } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import { PreparedSolution, type SolutionAssignment } from '../../src/protocol/solutions.js';
import type { AgentCommands } from '../agents/commands.js';
import { openProperties } from '../connections/properties.js';
import type { SecretBox } from '../crypto/master-key.js';
import { listAgents } from '../store/repos/agents.repo.js';
import { getConnection } from '../store/repos/connections.repo.js';
import { getOrg } from '../store/repos/orgs.repo.js';
import { getPreparedSolution, listPreparedForAgent, releaseMovesFrom } from '../store/repos/prepare.repo.js';
import { getSolution } from '../store/repos/solutions.repo.js';
import type { Database, PreparedSolutionRow } from '../store/schema.js';
import type { PreparedBody } from './prepare.js';
import { scheduleRuleOf } from './solutions.js';

export interface SolutionAssignmentsOptions {
  readonly db: Kysely<Database>;
  readonly secrets: SecretBox;
  readonly commands: AgentCommands;
  readonly log: FastifyBaseLogger;
}

/**
 * Solutions on Agents, reconciled like Connector installs: the desired state is the Service's
 * (each prepared Solution, assigned to the Agent it names), the actual state is what the Agent
 * holds. On every connect and after every change the Agent gets its full assignment list, drops
 * what is not on it before it fires anything, and names what it lacks; those are sent whole.
 *
 *   prepared_solutions ⋈ solutions (agent) ─▶ PreparedSolution (+ properties, schedule, switches)
 *        ─▶ version = hash of it ─▶ assignSolutions [{solutionId, version}] ─▶ {need} ─▶ putSolution × need
 *
 * The version is a hash of everything sent, so any change (a schedule, a password, a disable, a
 * new prepare) reaches the Agent, and nothing unchanged is sent twice.
 */
export class SolutionAssignments {
  /** Reconciles in flight per Agent: a change during one runs another after it. */
  readonly #busy = new Map<string, Promise<void>>();
  readonly #again = new Set<string>();

  constructor(private readonly opts: SolutionAssignmentsOptions) {}

  /** The whole definition the Agent runs, or undefined when the Solution was never prepared for its Agent. */
  async definition(solutionId: string): Promise<PreparedSolution | undefined> {
    const row = await getPreparedSolution(this.opts.db, solutionId);
    return row ? this.#assemble(row) : undefined;
  }

  async #assemble(row: PreparedSolutionRow): Promise<PreparedSolution | undefined> {
    const { db, secrets } = this.opts;
    const body = JSON.parse(row.body) as PreparedBody;
    const org = await getOrg(db, body.orgId);
    const solution = org ? await getSolution(db, org.id, row.solutionId) : undefined;
    if (!org || !solution || solution.agentId !== row.agentId) return undefined;
    const connections = [];
    for (const c of body.connections) {
      const conn = await getConnection(db, org.id, c.connectionId);
      if (!conn) return undefined;
      connections.push({
        connectionId: conn.id,
        connectorId: conn.connectorId,
        name: conn.name,
        properties: openProperties(secrets, conn),
      });
    }
    const unversioned: Omit<PreparedSolution, 'version'> = {
      ...body,
      name: solution.name,
      isDisabled: solution.isDisabled === 1,
      schedule: scheduleRuleOf(solution) ?? null,
      connections,
      capture: {
        captureOnFailedRecordsForReprocessing: org.captureOnFailedRecordsForReprocessing === 1,
        captureDuringCloudAppRuns: org.captureDuringCloudAppRuns === 1,
        captureDuringLocalAgentAppRuns: org.captureDuringLocalAgentAppRuns === 1,
        isSourceDataLocal: org.isSourceDataLocal === 1,
      },
    };
    // The Agent and the prepare it came from are part of the version: a Solution moved away and back
    // is a new assignment, whose schedule starts afresh, even when nothing else changed.
    const version = createHash('sha256')
      .update(JSON.stringify({ unversioned, agentId: row.agentId, preparedAt: row.preparedAt }))
      .digest('base64url')
      .slice(0, 32);
    return PreparedSolution.parse({ ...unversioned, version });
  }

  /** Brings every Agent of the Organization up to date (its capture switches changed, a Connection's properties changed). */
  async syncOrg(orgId: number): Promise<void> {
    const agents = await listAgents(this.opts.db, orgId);
    await Promise.allSettled(agents.map((a) => this.sync(a.id)));
  }

  /**
   * Brings the Agent up to date (when it is connected; otherwise its next connect does). Calls for
   * one Agent never overlap: one asked for during another runs once after it.
   */
  sync(agentId: string): Promise<void> {
    const busy = this.#busy.get(agentId);
    if (busy) {
      this.#again.add(agentId);
      return busy;
    }
    const run = (async () => {
      try {
        do {
          this.#again.delete(agentId);
          await this.#reconcile(agentId);
        } while (this.#again.has(agentId));
      } finally {
        this.#busy.delete(agentId);
      }
    })();
    this.#busy.set(agentId, run);
    return run;
  }

  /** {@link sync} without waiting for it: a failure is logged, and the Agent's next connect brings it up to date. */
  syncSoon(agentId: string): void {
    void this.sync(agentId).catch((err: unknown) => {
      this.opts.log.warn({ err, agentId }, 'agent solutions not reconciled; they are at its next connect');
    });
  }

  async #reconcile(agentId: string): Promise<void> {
    const { commands, log } = this.opts;
    if (!commands.isConnected(agentId)) return;
    const held: PreparedSolution[] = [];
    for (const row of await listPreparedForAgent(this.opts.db, agentId)) {
      const def = await this.#assemble(row).catch((err: unknown) => {
        log.warn(
          { err, solutionId: row.solutionId },
          'prepared Solution could not be assembled; it is left off the Agent',
        );
        return undefined;
      });
      if (def) held.push(def);
    }
    const assignments: SolutionAssignment[] = held.map((s) => ({ solutionId: s.solutionId, version: s.version }));
    const reply = await commands.send(agentId, { type: 'assignSolutions', assignments });
    // The Agent dropped everything not on the list: Solutions moved away from it may now go to their new Agents.
    const released = await releaseMovesFrom(this.opts.db, agentId);
    if (released.length > 0) {
      const next = new Set<string>();
      for (const id of released) {
        const row = await getPreparedSolution(this.opts.db, id);
        if (row && row.agentId !== agentId) next.add(row.agentId);
      }
      for (const other of next) this.syncSoon(other);
    }
    const need = new Set(reply.need);
    for (const s of held) {
      if (need.has(s.solutionId)) await commands.send(agentId, { type: 'putSolution', solution: s });
    }
    log.debug({ agentId, assigned: assignments.length, sent: need.size }, 'agent solutions reconciled');
  }
}
