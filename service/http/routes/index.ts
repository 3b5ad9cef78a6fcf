import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { ServiceDeps } from '../deps.js';
import orgsRoutes from './orgs.routes.js';
import registerRoutes from './register.routes.js';
import securityRulesRoutes from './security-rules.routes.js';
import securitySettingsRoutes from './security-settings.routes.js';
import invitedUsersRoutes from './invited-users.routes.js';
import orgUsersRoutes from './org-users.routes.js';
import userInvitationsRoutes from './user-invitations.routes.js';
import usersRoutes from './users.routes.js';
import subscriptionsRoutes from './subscriptions.routes.js';
import functionsRoutes from './functions.routes.js';
import settingsRoutes from './settings.routes.js';
import endpointsRoutes from './endpoints.routes.js';
import lookupTablesRoutes from './lookup-tables.routes.js';
import lookupValuesRoutes from './lookup-values.routes.js';
import lookupImportExportRoutes from './lookup-import-export.routes.js';
import agentsRoutes from './agents.routes.js';
import agentProvisioningRoutes from './agent-provisioning.routes.js';
import agentLogsRoutes from './agent-logs.routes.js';
import agentUpdatesRoutes from './agent-updates.routes.js';
import solutionLogsRoutes from './solution-logs.routes.js';
import connectorsRoutes from './connectors.routes.js';
import marketplaceRoutes from './marketplace.routes.js';
import managedConnectorsRoutes from './managed-connectors.routes.js';
import connectionsRoutes from './connections.routes.js';
import connectionMetadataRoutes from './connection-metadata.routes.js';
import solutionsRoutes from './solutions.routes.js';
import solutionConnectionsRoutes from './solution-connections.routes.js';
import mapsRoutes from './maps.routes.js';
import mapTransferRoutes from './map-transfer.routes.js';
import mapEditRoutes from './map-edit.routes.js';
import mapAgentRoutes from './map-agent.routes.js';
import mapValidationRoutes from './map-validation.routes.js';
import historyRoutes from './history.routes.js';
import historyExportRoutes from './history-export.routes.js';
import solutionClonesRoutes from './solution-clones.routes.js';
import solutionRunsRoutes from './solution-runs.routes.js';
import agentLookupTablesRoutes from './agent-lookup-tables.routes.js';
import agentReprocessRoutes from './agent-reprocess.routes.js';
import agentMessagesRoutes from './agent-messages.routes.js';
import requestMapsRoutes from './request-maps.routes.js';
import messagesRoutes, { requestsRoutes } from './messages.routes.js';

/** Every resource's route plugin, registered in this order by the app. */
export const ROUTES: Array<FastifyPluginAsyncZod<ServiceDeps>> = [
  orgsRoutes,
  registerRoutes,
  securityRulesRoutes,
  securitySettingsRoutes,
  orgUsersRoutes,
  invitedUsersRoutes,
  usersRoutes,
  userInvitationsRoutes,
  subscriptionsRoutes,
  functionsRoutes,
  settingsRoutes,
  endpointsRoutes,
  lookupTablesRoutes,
  lookupValuesRoutes,
  lookupImportExportRoutes,
  agentsRoutes,
  agentProvisioningRoutes,
  agentLogsRoutes,
  agentUpdatesRoutes,
  solutionLogsRoutes,
  connectorsRoutes,
  marketplaceRoutes,
  managedConnectorsRoutes,
  connectionsRoutes,
  connectionMetadataRoutes,
  solutionsRoutes,
  solutionConnectionsRoutes,
  mapsRoutes,
  mapTransferRoutes,
  mapEditRoutes,
  mapAgentRoutes,
  mapValidationRoutes,
  historyRoutes,
  historyExportRoutes,
  solutionRunsRoutes,
  solutionClonesRoutes,
  agentLookupTablesRoutes,
  agentReprocessRoutes,
  messagesRoutes,
  requestsRoutes,
  agentMessagesRoutes,
  requestMapsRoutes,
];
