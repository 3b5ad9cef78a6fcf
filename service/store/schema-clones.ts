import type { Selectable } from 'kysely';
import type { Flag } from '../util/values.js';

/** A copy of a Solution into an Organization (SPEC.md "Clone job"; migration 038, service/solutions/clones.ts). */
export interface CloneJobsTable {
  id: string;
  /** The source Solution and its Organization. */
  orgId: number;
  solutionId: string;
  destOrgId: number;
  destAgentId: string;
  byReference: Flag;
  /** The copy's ID, chosen when the job starts; the Solution exists only once the job succeeded. */
  clonedSolutionId: string;
  /** Who asked (a user's email), the copy's modificationBy. */
  createdBy: string;
  creationDate: string;
  finishDate: string | null;
  isComplete: Flag;
  hasError: Flag;
  message: string;
  /** The Service process that runs it (a replica ID or a process token): a job of a process gone is ended. */
  runner: string;
}

export type CloneJobRow = Selectable<CloneJobsTable>;

/** The tables of Solution copies. */
export interface CloneTables {
  cloneJobs: CloneJobsTable;
}
