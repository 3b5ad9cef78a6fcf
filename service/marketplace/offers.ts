import type { ConnectorManifest } from '../../src/protocol/connector-manifest.js';
import { listAgents } from '../store/repos/agents.repo.js';
import { getOrgConnector, listAgentInstalls, orgsWithConnector } from '../store/repos/connector-installs.repo.js';
import { listOrgsForUser } from '../store/repos/orgs.repo.js';
import {
  FINAL_INSTALL_STATUSES,
  type AgentConnectorInstallRow,
  type InstallStatus,
  type OrgConnectorRow,
} from '../store/schema.js';
import type { Db } from '../store/sql.js';
import { canUse } from './access.js';
import type { ConnectorCatalogue } from './catalogue.js';

/** A Marketplace search: a Connector matches when its name or its description contains the text given (ignoring case). */
export interface OfferFilter {
  byName?: string | undefined;
  byDescription?: string | undefined;
}

/** One Connector of the Marketplace with its install state in an Organization. */
export interface Offer {
  manifest: ConnectorManifest;
  /** The Organization's install (version, lock), if it has one. */
  installed: OrgConnectorRow | undefined;
  /** A private Connector the Organization manages or was granted. */
  isAssociated: boolean;
  /** The install on each Agent of the Organization, with the Agent's name. */
  agentInstalls: Array<AgentConnectorInstallRow & { agentName: string }>;
  /** The install that speaks for all Agents (see {@link overallInstall}); agentName null when its Agent is gone. */
  overall: { install: AgentConnectorInstallRow; agentName: string | null } | undefined;
}

function matches(m: ConnectorManifest, { byName, byDescription }: OfferFilter): boolean {
  if (byName === undefined && byDescription === undefined) return true;
  const name = byName !== undefined && m.name.toLowerCase().includes(byName.toLowerCase());
  const description = byDescription !== undefined && m.description.toLowerCase().includes(byDescription.toLowerCase());
  return name || description;
}

/** Every Connector the Organization may install, private Managed ones included, in catalogue order. */
export async function offersTo(
  db: Db,
  catalogue: ConnectorCatalogue,
  orgId: number,
  filter: OfferFilter,
): Promise<ConnectorManifest[]> {
  const list: ConnectorManifest[] = [];
  for (const m of catalogue.all()) if (await canUse(db, orgId, m)) list.push(m);
  return list.filter((m) => matches(m, filter));
}

/** The public Connectors installed in any of the Organizations (those of a caller without an Organization context). */
export async function offersInstalledIn(
  db: Db,
  catalogue: ConnectorCatalogue,
  userId: string,
  filter: OfferFilter,
): Promise<ConnectorManifest[]> {
  const orgIds = (await listOrgsForUser(db, userId, {})).map((o) => o.id);
  const list: ConnectorManifest[] = [];
  for (const m of catalogue.all())
    if (m.isPublic && (await orgsWithConnector(db, m.id, orgIds)).length > 0) list.push(m);
  return list.filter((m) => matches(m, filter));
}

/** The Connector's install state in the Organization (orgId undefined: no Organization context, nothing installed). */
export async function offerOf(db: Db, m: ConnectorManifest, orgId: number | undefined): Promise<Offer> {
  if (orgId === undefined)
    return { manifest: m, installed: undefined, isAssociated: false, agentInstalls: [], overall: undefined };
  const installed = await getOrgConnector(db, orgId, m.id);
  const names = new Map((await listAgents(db, orgId)).map((a) => [a.id, a.name]));
  const rows = await listAgentInstalls(db, orgId, m.id);
  const agentInstalls = rows.flatMap((r) => {
    const agentName = names.get(r.agentId);
    return agentName === undefined ? [] : [{ ...r, agentName }];
  });
  const overall = overallInstall(rows);
  return {
    manifest: m,
    installed,
    isAssociated: !m.isPublic && (await canUse(db, orgId, m)),
    agentInstalls,
    overall: overall ? { install: overall, agentName: names.get(overall.agentId) ?? null } : undefined,
  };
}

const ORDER: readonly InstallStatus[] = [
  'SendingCommandToTheAgent',
  'AgentReceivedCommand',
  'AgentDownloadingConnectorUpdate',
  'AgentServiceRestarting',
];
const rank = (s: InstallStatus): number => ORDER.indexOf(s);

/** The install that speaks for all Agents: the least advanced unfinished one, else a failure, else any. */
export function overallInstall(rows: readonly AgentConnectorInstallRow[]): AgentConnectorInstallRow | undefined {
  const open = rows.filter((r) => !FINAL_INSTALL_STATUSES.includes(r.status));
  if (open.length > 0) return open.sort((a, b) => rank(a.status) - rank(b.status))[0];
  return rows.find((r) => r.status === 'InstallFailed' || r.status === 'InstallTimedOut') ?? rows[0];
}
