import type { Db } from '../store/sql.js';
import type { OrgRow } from '../store/schema.js';

/** The health states of an Organization, worst last (SPEC.md's Organization status). */
export const ORG_HEALTH = [
  'Ok',
  'Processing',
  'Job Disabled',
  'Job Warning',
  'Job Failure',
  'System Issue',
  'System Failure',
] as const;
export type OrgHealth = (typeof ORG_HEALTH)[number];

export interface OrgStatus {
  status: OrgHealth;
  statusCause: string | null;
}

const rank = (h: OrgHealth): number => ORG_HEALTH.indexOf(h);

/**
 * The health of an Organization for expandStatus and the status filter, derived from its Agents
 * and Solutions when read, the worst first:
 *
 * - System Failure: an Agent whose heartbeat failed;
 * - System Issue: an Agent whose heartbeat is late, or one shut down that a Solution uses;
 * - Job Failure: a Solution whose last run ended with a fatal error;
 * - Job Warning: a Solution whose last run had record errors;
 * - Job Disabled: a disabled Solution;
 * - Processing: a Solution running now;
 * - Ok otherwise. The cause names the Agent or Solution (the first by name) and what it is.
 */
export async function orgStatus(db: Db, org: Pick<OrgRow, 'id'>): Promise<OrgStatus> {
  const agents = await db
    .selectFrom('agents')
    .select(['id', 'name', 'status'])
    .where('orgId', '=', org.id)
    .orderBy('name')
    .execute();
  const solutions = await db
    .selectFrom('solutions')
    .select(['name', 'agentId', 'isDisabled', 'inProgressStartTime', 'lastRunResult'])
    .where('orgId', '=', org.id)
    .orderBy('nameKey')
    .execute();
  const used = new Set(solutions.map((s) => s.agentId));
  let worst: OrgStatus = { status: 'Ok', statusCause: null };
  const consider = (status: OrgHealth, cause: string): void => {
    if (rank(status) > rank(worst.status)) worst = { status, statusCause: cause };
  };
  for (const a of agents) {
    if (a.status === 'HeartbeatFailed') consider('System Failure', `Agent ${a.name}: its heartbeat failed`);
    else if (a.status === 'HeartbeatLate') consider('System Issue', `Agent ${a.name}: its heartbeat is late`);
    else if ((a.status === 'Shutdown' || a.status === 'ShutdownCloud') && used.has(a.id))
      consider('System Issue', `Agent ${a.name} is shut down and runs Solutions`);
  }
  for (const s of solutions) {
    if (s.isDisabled === 1) consider('Job Disabled', `Solution ${s.name} is disabled`);
    else if (s.lastRunResult === 'FatalError' || s.lastRunResult === 'RecordErrorsAndFatalErrors')
      consider('Job Failure', `Solution ${s.name}: its last run failed`);
    else if (s.lastRunResult === 'CompletedWithErrors')
      consider('Job Warning', `Solution ${s.name}: its last run had record errors`);
    if (s.inProgressStartTime !== null) consider('Processing', `Solution ${s.name} is running`);
  }
  return worst;
}
