import { z } from 'zod';
import { decimal, MAX_INT, PageQuery, Timestamp } from './common.js';

export const MarketplaceQuery = PageQuery.extend({
  filterByName: z.string().max(255).optional(),
  filterByDescription: z.string().max(255).optional(),
  /** Needed to include the private Managed Connectors the Organization may use. */
  orgId: decimal(z.number().int().positive().max(MAX_INT).optional()),
});

const InstallStatus = z.enum([
  'SendingCommandToTheAgent',
  'AgentReceivedCommand',
  'AgentDownloadingConnectorUpdate',
  'AgentServiceRestarting',
  'InstallFailed',
  'InstallTimedOut',
  'Installed',
]);

/** The Marketplace Connector model of SPEC.md; agentInstallStatuses holds one entry per Agent. */
export const MarketplaceConnector = z.object({
  adapterTypeId: z.string(),
  name: z.string(),
  description: z.string(),
  providerName: z.string(),
  link: z.string().nullable(),
  logoUrl: z.string().nullable(),
  logo: z.null(),
  contactUrl: z.string().nullable(),
  certificationDate: z.string().nullable(),
  lastModificationDate: Timestamp.nullable(),
  version: z.object({
    major: z.number().int(),
    minor: z.number().int(),
    build: z.number().int(),
    revision: z.number().int(),
    majorRevision: z.number().int(),
    minorRevision: z.number().int(),
  }),
  installed: z.boolean(),
  isAssociated: z.boolean(),
  isFree: z.boolean(),
  isHotFix: z.boolean(),
  isLocked: z.boolean(),
  isPublic: z.boolean(),
  requiresJava: z.boolean(),
  supportsCloudAgents: z.boolean(),
  isisSource: z.boolean(),
  isisTarget: z.boolean(),
  ismsSource: z.boolean(),
  ismsTarget: z.boolean(),
  isrsSource: z.boolean(),
  isrsTarget: z.boolean(),
  agentId: z.string().nullable(),
  agentName: z.string().nullable(),
  status: InstallStatus.nullable(),
  agentInstallStatuses: z.array(
    z.object({
      agentId: z.string(),
      agentName: z.string(),
      operation: z.enum(['install', 'uninstall']),
      version: z.string(),
      status: InstallStatus,
      error: z.string().nullable(),
      lastModificationDate: Timestamp,
    }),
  ),
});
export type MarketplaceConnector = z.infer<typeof MarketplaceConnector>;

/** A customer Organization of a Managed Connector. */
export const Customer = z.object({
  orgId: z.number().int(),
  orgName: z.string(),
  provisionedBy: z.string(),
  provisionedDate: Timestamp,
});
export type Customer = z.infer<typeof Customer>;
