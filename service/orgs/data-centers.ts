import { FerryError } from '../../src/errors/ferry-error.js';

/** The data centers of SPEC.md; 12, 13 and 14 exist only for platform-hosted Organizations. */
export const DATA_CENTERS: Readonly<Record<number, { name: string; location: string; platformOnly: boolean }>> = {
  1: { name: 'US', location: 'United States (provider A)', platformOnly: false },
  2: { name: 'EU', location: 'Europe (provider A)', platformOnly: false },
  12: { name: 'US2', location: 'United States (provider B)', platformOnly: true },
  13: { name: 'AU', location: 'Australia (provider A)', platformOnly: true },
  14: { name: 'USEast', location: 'United States East (provider A)', platformOnly: true },
};
export const DEFAULT_DATA_CENTER = 1;

/**
 * The data center a new Organization gets: the one asked for (absent, null or 0 = the default),
 * refused with API_VALIDATION when it does not exist or is for platform-hosted Organizations only.
 */
export function checkDataCenter(id: number | null | undefined, platformHosted: boolean): number {
  if (id === undefined || id === null || id === 0) return DEFAULT_DATA_CENTER;
  const dc = DATA_CENTERS[id];
  if (!dc) {
    throw new FerryError(
      'API_VALIDATION',
      `dataCenterId ${id} is not a data center; use one of ${Object.keys(DATA_CENTERS).join(', ')}.`,
      {
        errors: [{ path: 'body.dataCenterId', message: 'unknown data center' }],
      },
    );
  }
  if (dc.platformOnly && !platformHosted) {
    throw new FerryError('API_VALIDATION', `dataCenterId ${id} exists only for platform-hosted Organizations.`, {
      errors: [{ path: 'body.dataCenterId', message: 'only for platform-hosted Organizations' }],
    });
  }
  return id;
}
