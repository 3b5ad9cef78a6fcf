import { FUNCTION_CATEGORIES } from '../../src/maps/formula/catalogue.js';
import type { ServiceConfig } from '../config.js';

/**
 * The fixed operational limits of SPEC.md and DESIGN.md that an Organization sees as Settings.
 * The code that enforces each limit should import it from here, so that the published value and
 * the enforced one cannot drift apart.
 */
export const LIMITS = {
  maxBlocksPerMap: 250,
  defaultBulkBatchSize: 2000,
  defaultPageSize: 100,
  maxPageSize: 1000,
  cloudAgentsPerOrganization: 1,
  maxNestedPropertyRelations: 10,
} as const;

export type SettingValue = { decimal: number } | { blob: readonly string[] };

/** Each Setting: a fixed GUID (ids never change), its name and how its value is computed. */
const DEFINITIONS: ReadonlyArray<{ id: string; name: string; value: (config: ServiceConfig) => SettingValue }> = [
  {
    id: 'f8c335cc-0008-469d-bcfc-6bd03a2a2b85',
    name: 'MaxBlocksPerMap',
    value: () => ({ decimal: LIMITS.maxBlocksPerMap }),
  },
  {
    id: 'e1ba379d-933e-44c4-b05d-e0abac15f809',
    name: 'HistoryRetentionDays',
    value: (c) => ({ decimal: c.historyRetentionDays }),
  },
  {
    id: 'e445b494-0ff9-42b3-aed7-887facd5aadb',
    name: 'DefaultBulkBatchSize',
    value: () => ({ decimal: LIMITS.defaultBulkBatchSize }),
  },
  {
    id: 'e0e2be62-c14e-47f1-afd4-e75226ffd1af',
    name: 'ApiRateLimitPerMinute',
    value: (c) => ({ decimal: c.rateLimitPerMinute }),
  },
  {
    id: '1696e865-36de-401c-b417-ef2c589fd0c7',
    name: 'ApiRateLimitPerDay',
    value: (c) => ({ decimal: c.rateLimitPerDay }),
  },
  {
    id: 'dec94c72-c9e2-4b08-80b4-5a8614f2a724',
    name: 'DefaultPageSize',
    value: () => ({ decimal: LIMITS.defaultPageSize }),
  },
  { id: 'baeb24f5-5138-4647-97f1-f0ee5df40f20', name: 'MaxPageSize', value: () => ({ decimal: LIMITS.maxPageSize }) },
  {
    id: 'a77ba2ba-c883-4d36-950e-9305938776e0',
    name: 'RequestBodyLimitBytes',
    value: (c) => ({ decimal: c.bodyLimit }),
  },
  {
    id: 'a509a07e-b5cb-41d9-9f21-d428313e1b61',
    name: 'HeartbeatLateAfterMinutes',
    value: (c) => ({ decimal: secondsAsMinutes(c.heartbeatLateAfter) }),
  },
  {
    id: '01f11139-1a12-4885-b6aa-862d89358f0e',
    name: 'HeartbeatFailedAfterMinutes',
    value: (c) => ({ decimal: secondsAsMinutes(c.heartbeatFailedAfter) }),
  },
  {
    id: '693f4338-1d24-4b07-b636-ec983b1dae12',
    name: 'CloudAgentsPerOrganization',
    value: () => ({ decimal: LIMITS.cloudAgentsPerOrganization }),
  },
  {
    id: '139fc8a2-e64d-4675-b55b-e6e8ec675597',
    name: 'MaxNestedPropertyRelations',
    value: () => ({ decimal: LIMITS.maxNestedPropertyRelations }),
  },
  {
    id: '6e3375bc-208e-48dd-83c0-5c6d8c9cd85e',
    name: 'FunctionCategories',
    value: () => ({ blob: FUNCTION_CATEGORIES }),
  },
];

/**
 * A limit configured in seconds, in the minutes its Setting is named after. A limit that is not a
 * whole number of minutes stays fractional (30 s is 0.5), since rounding would publish a limit other
 * than the one enforced; six decimals keep 20 s readable (0.333333) and are finer than the sweeper.
 */
export function secondsAsMinutes(seconds: number): number {
  return Math.round((seconds / 60) * 1e6) / 1e6;
}

/** One operational Setting: a number, or a list of texts. */
export interface OrgSetting {
  id: string;
  name: string;
  value: SettingValue;
}

/**
 * The effective operational Settings of an Organization, from the Service configuration and the
 * fixed limits. Every Organization of one Service sees the same values today; the Organization is
 * a parameter so that per-Organization overrides need no change for callers.
 */
export function orgSettings(config: ServiceConfig, _orgId: number): OrgSetting[] {
  return DEFINITIONS.map((d) => ({ id: d.id, name: d.name, value: d.value(config) }));
}
