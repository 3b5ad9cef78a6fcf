import type { OrgRow } from '../store/schema.js';

/** The health states of an Organization, worst last (SPEC.md's Organization status). */
export const ORG_HEALTH = ['Ok', 'Processing', 'Job Disabled', 'Job Warning', 'Job Failure', 'System Issue', 'System Failure'] as const;
export type OrgHealth = (typeof ORG_HEALTH)[number];

export interface OrgStatus {
  status: OrgHealth;
  statusCause: string | null;
}

/**
 * The health of an Organization for expandStatus and the status filter. Agents and Solution runs
 * feed it as they come to exist; an Organization with nothing failing is Ok.
 */
export function orgStatus(_org: OrgRow): OrgStatus {
  return { status: 'Ok', statusCause: null };
}
