import { z } from 'zod';
import { ORG_HEALTH } from '../../orgs/status.js';
import { Guid, Name } from './common.js';

/** The status filter of the Organization list: All, or one health state. */
export const ORG_STATUSES = ['All', ...ORG_HEALTH] as const;

const Address = z.string().trim().min(1).max(64);

/** A Security Rule as clients send it (alone, or inside an Organization model). */
export const SecurityRuleInput = z.strictObject({
  id: Guid.optional(),
  name: Name,
  allowedIpRangeStartAddress: Address,
  allowedIpRangeEndAddress: Address,
  apiAccessEnabled: z.boolean().default(false),
  eventSolutionAccessEnabled: z.boolean().default(false),
});
export type SecurityRuleInput = z.infer<typeof SecurityRuleInput>;

export const SecurityRule = z.object({
  id: z.string(),
  name: z.string(),
  allowedIpRangeStartAddress: z.string(),
  allowedIpRangeEndAddress: z.string(),
  apiAccessEnabled: z.boolean(),
  eventSolutionAccessEnabled: z.boolean(),
});
export type SecurityRule = z.infer<typeof SecurityRule>;

const captureFields = {
  captureOnFailedRecordsForReprocessing: z.boolean().optional(),
  captureDuringCloudAppRuns: z.boolean().optional(),
  captureDuringLocalAgentAppRuns: z.boolean().optional(),
  isSourceDataLocal: z.boolean().optional(),
};

const Administrator = z.object({
  email: z.string(),
  firstName: z.string().nullable(),
  lastName: z.string().nullable(),
});

/**
 * The Organization model clients send on create and modify. Fields the Service owns (id,
 * administrators, apiToken, isSvcOrg, data center names, status) are accepted so that a model read
 * with GET can be sent back unchanged, and ignored.
 */
export const OrganizationInput = z.strictObject({
  id: z.number().int().optional(),
  name: Name.optional(),
  parentId: z.number().int().min(0).max(2_147_483_647).nullable().optional(),
  administrators: z.array(z.unknown()).optional(),
  city: z.string().max(255).nullable().optional(),
  country: z.string().max(255).nullable().optional(),
  dataCenterId: z.number().int().nullable().optional(),
  dataCenterName: z.string().nullable().optional(),
  dataCenterLocation: z.string().nullable().optional(),
  isSvcOrg: z.boolean().optional(),
  apiToken: z.string().nullable().optional(),
  securityRules: z.array(SecurityRuleInput).max(500).optional(),
  ...captureFields,
  isAgentLogDownloadAllowed: z.boolean().optional(),
  status: z.string().optional(),
  statusCause: z.string().nullable().optional(),
});
export type OrganizationInput = z.infer<typeof OrganizationInput>;

export const Organization = z.object({
  id: z.number().int(),
  name: z.string(),
  parentId: z.number().int(),
  administrators: z.array(Administrator),
  city: z.string().nullable(),
  country: z.string().nullable(),
  dataCenterId: z.number().int(),
  dataCenterName: z.string(),
  dataCenterLocation: z.string(),
  isSvcOrg: z.boolean(),
  /** Only Administrators see it; null for others. */
  apiToken: z.string().nullable(),
  securityRules: z.array(SecurityRule),
  captureOnFailedRecordsForReprocessing: z.boolean(),
  captureDuringCloudAppRuns: z.boolean(),
  captureDuringLocalAgentAppRuns: z.boolean(),
  isSourceDataLocal: z.boolean(),
  isAgentLogDownloadAllowed: z.boolean(),
  /** With expandStatus=true. */
  status: z.enum(ORG_STATUSES).optional(),
  statusCause: z.string().nullable().optional(),
});
export type Organization = z.infer<typeof Organization>;

export const SecuritySettings = z.object({
  apiCryptoToken: z.string(),
  eventSolutionAccessToken: z.string(),
  captureOnFailedRecordsForReprocessing: z.boolean(),
  captureDuringCloudAppRuns: z.boolean(),
  captureDuringLocalAgentAppRuns: z.boolean(),
  isSourceDataLocal: z.boolean(),
  isAgentLogDownloadAllowed: z.boolean(),
});

/** Tokens are reset with their own calls; a model read with GET may carry them and is accepted. */
export const SecuritySettingsInput = z.strictObject({
  apiCryptoToken: z.string().optional(),
  eventSolutionAccessToken: z.string().optional(),
  ...captureFields,
  isAgentLogDownloadAllowed: z.boolean().optional(),
});
