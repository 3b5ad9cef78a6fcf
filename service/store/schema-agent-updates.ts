import type { Generated } from 'kysely';
import type { Flag } from '../util/values.js';

/** The columns of `agents` that follow its updates (migration 041, service/agents/agent-updates.ts). */
export interface AgentUpdateColumns {
  /** An operator holds the Agent at its version: no update is offered to it. */
  versionHold: Generated<Flag>;
  /** The version an update under way installs; null when none is. */
  updateVersion: string | null;
  /** The version of the last update that failed: not offered again until an operator asks. */
  updateFailedVersion: string | null;
  /** Why the last update failed (shown as the Agent's `updateError`). */
  updateError: string | null;
}
