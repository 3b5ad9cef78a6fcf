import { FerryError } from '../../src/errors/ferry-error.js';
import type { OrgUpdate } from '../store/schema.js';
import { toFlag } from '../util/values.js';

/** The capture switches of an Organization as a client sends them (any may be absent). */
export interface CaptureSwitches {
  captureOnFailedRecordsForReprocessing?: boolean | undefined;
  captureDuringCloudAppRuns?: boolean | undefined;
  captureDuringLocalAgentAppRuns?: boolean | undefined;
  isSourceDataLocal?: boolean | undefined;
}

/**
 * SPEC.md's capture rule 2: a model that carries any capture field carries all three. Returns the
 * columns to store (isSourceDataLocal is stored as sent; rules 1 and 3 apply when it is read, in
 * src/failures/capture.ts).
 */
export function capturePatch(input: CaptureSwitches, base = 'body.'): OrgUpdate {
  const three = [
    input.captureOnFailedRecordsForReprocessing,
    input.captureDuringCloudAppRuns,
    input.captureDuringLocalAgentAppRuns,
  ];
  const given = three.filter((v) => v !== undefined).length;
  if (given > 0 && given < 3) {
    throw new FerryError(
      'API_VALIDATION',
      'When any capture field is sent, send all three: captureOnFailedRecordsForReprocessing, captureDuringCloudAppRuns and captureDuringLocalAgentAppRuns.',
      {
        errors: (
          [
            'captureOnFailedRecordsForReprocessing',
            'captureDuringCloudAppRuns',
            'captureDuringLocalAgentAppRuns',
          ] as const
        )
          .filter((k) => input[k] === undefined)
          .map((k) => ({ path: `${base}${k}`, message: 'required when any capture field is sent' })),
      },
    );
  }
  const patch: OrgUpdate = {};
  if (given === 3) {
    patch.captureOnFailedRecordsForReprocessing = toFlag(input.captureOnFailedRecordsForReprocessing === true);
    patch.captureDuringCloudAppRuns = toFlag(input.captureDuringCloudAppRuns === true);
    patch.captureDuringLocalAgentAppRuns = toFlag(input.captureDuringLocalAgentAppRuns === true);
  }
  if (input.isSourceDataLocal !== undefined) patch.isSourceDataLocal = toFlag(input.isSourceDataLocal);
  return patch;
}
