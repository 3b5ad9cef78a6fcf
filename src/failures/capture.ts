/**
 * Where failed source records go, per the Organization's capture settings (SPEC.md
 * "Organization", rules 1 and 3):
 *
 *   captureOnFailedRecordsForReprocessing false         → nowhere
 *   Cloud Agent run, captureDuringCloudAppRuns false    → nowhere; else the cloud store
 *   local run, captureDuringLocalAgentAppRuns false     → nowhere
 *   local run, isSourceDataLocal true                   → the Agent's local store
 *   local run, isSourceDataLocal false                  → the outbox (cloud store)
 */
import type { FailedRecordInput, FailedRecordSink } from './sink.js';

export interface CaptureSettings {
  captureOnFailedRecordsForReprocessing: boolean;
  captureDuringCloudAppRuns: boolean;
  captureDuringLocalAgentAppRuns: boolean;
  isSourceDataLocal: boolean;
}

export type CaptureTarget = 'none' | 'local' | 'cloud';

export function captureTarget(s: CaptureSettings, runsOn: 'cloud' | 'local'): CaptureTarget {
  if (!s.captureOnFailedRecordsForReprocessing) return 'none';
  if (runsOn === 'cloud') return s.captureDuringCloudAppRuns ? 'cloud' : 'none';
  if (!s.captureDuringLocalAgentAppRuns) return 'none';
  return s.isSourceDataLocal ? 'local' : 'cloud';
}

/** The sink a run uses: the local store, the outbox hand-off, or none. */
export function captureSink(
  s: CaptureSettings,
  runsOn: 'cloud' | 'local',
  local: FailedRecordSink | undefined,
  toOutbox: ((rec: FailedRecordInput & { id: string }) => Promise<void>) | undefined,
): FailedRecordSink | undefined {
  const target = captureTarget(s, runsOn);
  if (target === 'local') return local;
  if (target === 'cloud' && toOutbox) {
    return {
      async capture(rec) {
        const id = globalThis.crypto.randomUUID();
        await toOutbox({ ...rec, id });
        return id;
      },
    };
  }
  return undefined;
}
