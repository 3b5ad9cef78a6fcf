import type { OrgConnectorChange } from '../marketplace/installs.js';
import type { AgentRow, ExecutionRow, OrgRow, SolutionRow } from '../store/schema.js';

/**
 * The text of each notification mail: what happened, to what, the numbers, and the API path to
 * look at. Plain text, built only from names, IDs, counts and times — never a Connection's
 * properties or any other secret.
 */

export interface MailText {
  subject: string;
  body: string;
}

/** Where the API paths in a mail point: the public URL when configured, else paths alone. */
export type ApiBase = string;

/** A name for a one-line subject: control characters out, long names cut. */
function clean(name: string, max = 120): string {
  // eslint-disable-next-line no-control-regex
  const one = name.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

function lines(...parts: Array<string | undefined>): string {
  return `${parts.filter((p) => p !== undefined).join('\n')}\n`;
}

const FOOTER =
  'You receive this mail because you switched this notification on. Change it with PUT /v1/users/{userId}/notificationsettings.';

function orgLine(org: Pick<OrgRow, 'id' | 'name'>): string {
  return `Organization: ${clean(org.name)} (orgId ${org.id})`;
}

function runFacts(
  base: ApiBase,
  org: Pick<OrgRow, 'id' | 'name'>,
  solution: SolutionRow,
  agent: AgentRow,
  e: ExecutionRow,
): string[] {
  const h = `${base}/v1/orgs/${org.id}/solutions/${solution.id}/history/${e.id}`;
  const details = e.details ? clean(e.details, 2000) : undefined;
  return [
    orgLine(org),
    `Solution: ${clean(solution.name)} (${solution.solutionType}, solutionId ${solution.id})`,
    `Agent: ${clean(agent.name)} (agentId ${agent.id})`,
    `Execution: History ID ${e.id}, run ${e.runId}${e.isReprocessJob === 1 ? ' (reprocessing)' : ''}`,
    `Started: ${e.start}`,
    `Ended: ${e.stop ?? ''}`,
    `Result: ${e.result ?? ''}${e.stopped === 1 ? ' (stopped by a user)' : ''}`,
    `Records processed: ${e.recordsProcessed}`,
    `Records failed: ${e.recordsFailed}`,
    ...(details ? [`Details: ${details}`] : []),
    '',
    'Look at it:',
    `  GET ${h}`,
    `  GET ${h}/errors`,
  ];
}

/** `failedJobEmail`: the run ended with a fatal error. */
export function failedJobMail(
  base: ApiBase,
  org: OrgRow,
  solution: SolutionRow,
  agent: AgentRow,
  e: ExecutionRow,
): MailText {
  return {
    subject: `[Ferry] Solution "${clean(solution.name)}" failed: ${e.result ?? ''}`,
    body: lines(
      `The Solution "${clean(solution.name)}" ended with a fatal error.`,
      '',
      ...runFacts(base, org, solution, agent, e),
      '',
      FOOTER,
    ),
  };
}

/** `failedRowsEmail`: records failed in the run. */
export function failedRowsMail(
  base: ApiBase,
  org: OrgRow,
  solution: SolutionRow,
  agent: AgentRow,
  e: ExecutionRow,
): MailText {
  const n = e.recordsFailed;
  return {
    subject: `[Ferry] Solution "${clean(solution.name)}": ${n} record${n === 1 ? '' : 's'} failed`,
    body: lines(
      `Records failed in a run of the Solution "${clean(solution.name)}".`,
      '',
      ...runFacts(base, org, solution, agent, e),
      '',
      'Records that can be reprocessed can be marked and reprocessed from History once the cause is fixed.',
      '',
      FOOTER,
    ),
  };
}

/** `eventFailedJobEmail`: a run of an Integration Event Solution did not complete successfully. */
export function eventFailedMail(
  base: ApiBase,
  org: OrgRow,
  solution: SolutionRow,
  agent: AgentRow,
  e: ExecutionRow,
): MailText {
  return {
    subject: `[Ferry] Event Solution "${clean(solution.name)}" failed: ${e.result ?? ''}`,
    body: lines(
      `A run of the Integration Event Solution "${clean(solution.name)}" failed.`,
      '',
      ...runFacts(base, org, solution, agent, e),
      '',
      FOOTER,
    ),
  };
}

/** `heartbeatEmail`: the Agent went silent long enough to be HeartbeatFailed. */
export function heartbeatFailedMail(base: ApiBase, org: OrgRow, agent: AgentRow, failedAfterSeconds: number): MailText {
  return {
    subject: `[Ferry] Agent "${clean(agent.name)}" stopped sending heartbeats`,
    body: lines(
      `The Agent "${clean(agent.name)}" has not contacted the Service for more than ${formatSeconds(failedAfterSeconds)}; its status is HeartbeatFailed.`,
      'Its Solutions do not run until it is back. Check that its machine is up and that the Agent service runs and reaches the Service.',
      '',
      orgLine(org),
      `Agent: ${clean(agent.name)} (agentId ${agent.id})`,
      `Machine: ${clean(agent.machineName)}`,
      `Last contact: ${agent.lastContactTime ?? 'never'}`,
      '',
      'Look at it:',
      `  GET ${base}/v1/orgs/${org.id}/agents/${agent.id}`,
      '',
      FOOTER,
    ),
  };
}

/** A Connector installed in or uninstalled from an Organization, and when. */
export type ConnectorChange = OrgConnectorChange & { at: string };

/** `connectorActivationEmail`: a Connector was installed or uninstalled. */
export function connectorMail(base: ApiBase, org: OrgRow, c: ConnectorChange): MailText {
  const done = c.operation === 'install' ? 'installed in' : 'uninstalled from';
  return {
    subject: `[Ferry] Connector "${clean(c.connectorName)}" ${done} ${clean(org.name)}`,
    body: lines(
      `The Connector "${clean(c.connectorName)}" was ${done} the Organization ${clean(org.name)}${c.operation === 'install' ? ' and is being installed on its Agents' : ' and its Agents'}.`,
      '',
      orgLine(org),
      `Connector: ${clean(c.connectorName)} (connectorId ${c.connectorId})`,
      ...(c.version ? [`Version: ${c.version}`] : []),
      ...(c.by ? [`By: ${c.by}`] : []),
      `At: ${c.at}`,
      '',
      'Look at it:',
      c.operation === 'install'
        ? `  GET ${base}/v1/orgs/${org.id}/connectors/${c.connectorId}`
        : `  GET ${base}/v1/orgs/${org.id}/connectors`,
      '',
      FOOTER,
    ),
  };
}

function formatSeconds(s: number): string {
  if (s >= 3600 && s % 3600 === 0) return `${s / 3600} hour${s === 3600 ? '' : 's'}`;
  if (s >= 60 && s % 60 === 0) return `${s / 60} minute${s === 60 ? '' : 's'}`;
  return `${s} second${s === 1 ? '' : 's'}`;
}
