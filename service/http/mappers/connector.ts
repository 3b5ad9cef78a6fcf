import type { z } from 'zod';
import type { ConnectorManifest } from '../../../src/protocol/connector-manifest.js';
import { requireGenericUi } from '../../marketplace/catalogue.js';
import type { ManagedConnectorCustomer } from '../../marketplace/customers.js';
import type { OrgConnector } from '../../marketplace/installs.js';
import type { Offer } from '../../marketplace/offers.js';
import type { OrgConnectorRow } from '../../store/schema.js';
import type { Connector, UiOptions, VersionLock } from '../schemas/connection.schema.js';
import type { Customer, MarketplaceConnector } from '../schemas/marketplace.schema.js';

/** The Connector model of a catalogue manifest, at its current version. */
export function toConnector(m: ConnectorManifest): Connector {
  return {
    id: m.id,
    name: m.name,
    description: m.description,
    vendorName: m.vendor,
    companyName: m.vendor,
    version: m.version,
    isCloudSupported: m.isCloudSupported,
    connectionLimitReached: false,
    uiName: m.uiName,
    uiVersion: m.uiVersion ?? m.version,
    solutionRoles: m.solutionRoles,
  };
}

/** The Connector model as an Organization sees it: its installed (or locked) version and its Connection limit. */
export function toOrgConnector(c: OrgConnector): Connector {
  return { ...toConnector(c.manifest), version: c.version, connectionLimitReached: c.connectionLimitReached };
}

/** The generic connection form of a Connector; API_UNSUPPORTED for one with its own user interface. */
export function toUiOptions(m: ConnectorManifest): UiOptions {
  requireGenericUi(m);
  return {
    helpURL: m.helpUrl ?? null,
    uiDecorations: m.uiDecorations.map((d, i) => ({
      propertyName: d.propertyName,
      label: d.label,
      inputType: d.inputType,
      isRequired: d.isRequired,
      order: d.order ?? i,
      options: d.options ?? [],
      ...(d.defaultValue !== undefined ? { defaultValue: d.defaultValue } : {}),
      ...(d.description !== undefined ? { description: d.description } : {}),
    })),
  };
}

export function toVersionLock(row: OrgConnectorRow): z.infer<typeof VersionLock> {
  return {
    isLocked: row.isLocked === 1 ? 'true' : 'false',
    version: row.version,
    creationDate: row.lockCreatedAt,
    lastModificationDate: row.lockModifiedAt,
    modificationBy: row.lockModifiedBy,
  };
}

/** The Marketplace Connector model of SPEC.md: the catalogue entry with its install state in the Organization. */
export function toMarketplaceConnector(offer: Offer): MarketplaceConnector {
  const { manifest: m, installed, overall } = offer;
  const roles = new Set(m.solutionRoles);
  return {
    adapterTypeId: m.id,
    name: m.name,
    description: m.description,
    providerName: m.vendor,
    link: m.link ?? m.helpUrl ?? null,
    logoUrl: m.logoUrl ?? null,
    logo: null,
    contactUrl: m.contactUrl ?? null,
    certificationDate: m.certificationDate ?? null,
    lastModificationDate: installed?.lockModifiedAt ?? installed?.installedAt ?? null,
    version: versionParts(installed?.version ?? m.version),
    installed: installed !== undefined,
    isAssociated: offer.isAssociated,
    isFree: m.isFree,
    isHotFix: m.isHotFix,
    isLocked: installed?.isLocked === 1,
    isPublic: m.isPublic,
    requiresJava: false,
    supportsCloudAgents: m.isCloudSupported,
    isisSource: roles.has('Svc.IS2.Source'),
    isisTarget: roles.has('Svc.IS2.Target'),
    ismsSource: roles.has('Svc.MS2.Source'),
    ismsTarget: roles.has('Svc.MS2.Target'),
    isrsSource: roles.has('Svc.RS.Source'),
    isrsTarget: roles.has('Svc.RS.Target'),
    agentId: overall?.install.agentId ?? null,
    agentName: overall?.agentName ?? null,
    status: overall?.install.status ?? (installed ? 'Installed' : null),
    agentInstallStatuses: offer.agentInstalls.map((r) => ({
      agentId: r.agentId,
      agentName: r.agentName,
      operation: r.operation,
      version: r.version,
      status: r.status,
      error: r.error,
      lastModificationDate: r.updatedAt,
    })),
  };
}

/** SPEC's version parts of a semantic version: major.minor.build, revision 0 (majorRevision/minorRevision its 16-bit halves). */
export function versionParts(version: string): MarketplaceConnector['version'] {
  const [major = 0, minor = 0, build = 0, revision = 0] = version
    .split(/[-+]/)[0]!
    .split('.')
    .map((p) => Number.parseInt(p, 10) || 0);
  return { major, minor, build, revision, majorRevision: revision >> 16, minorRevision: revision & 0xffff };
}

export function toCustomer(row: ManagedConnectorCustomer): Customer {
  return {
    orgId: row.orgId,
    orgName: row.orgName,
    provisionedBy: row.provisionedBy,
    provisionedDate: row.provisionedDate,
  };
}
