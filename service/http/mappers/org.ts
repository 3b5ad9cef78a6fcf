import type { z } from 'zod';
import type { SecretBox } from '../../crypto/master-key.js';
import { DATA_CENTERS } from '../../orgs/data-centers.js';
import type { OrganizationView } from '../../orgs/organizations.js';
import type { OrgSetting } from '../../orgs/settings.js';
import type { OrgStatus } from '../../orgs/status.js';
import type { OrgRow, RoleType, SecurityRuleRow } from '../../store/schema.js';
import { fromFlag } from '../../util/values.js';
import type { Organization, SecurityRule, SecuritySettings } from '../schemas/org.schema.js';
import type { Setting } from '../schemas/setting.schema.js';

/** Stored Organizations, their Security Rules and Settings as the API shows them. */

export function toSecurityRule(r: SecurityRuleRow): SecurityRule {
  return {
    id: r.id,
    name: r.name,
    allowedIpRangeStartAddress: r.allowedIpRangeStartAddress,
    allowedIpRangeEndAddress: r.allowedIpRangeEndAddress,
    apiAccessEnabled: fromFlag(r.apiAccessEnabled),
    eventSolutionAccessEnabled: fromFlag(r.eventSolutionAccessEnabled),
  };
}

/** The API model of an Organization (with its rules and Administrators). The crypto token is shown to Administrators only. */
export function toOrganization(
  secrets: SecretBox,
  view: OrganizationView,
  role: RoleType,
  status?: OrgStatus,
): Organization {
  const { org } = view;
  const dc = DATA_CENTERS[org.dataCenterId] ?? { name: 'Unknown', location: 'Unknown' };
  return {
    id: org.id,
    name: org.name,
    parentId: org.parentId ?? 0,
    administrators: view.administrators.map((m) => ({ email: m.email, firstName: m.firstName, lastName: m.lastName })),
    city: org.city,
    country: org.country,
    dataCenterId: org.dataCenterId,
    dataCenterName: dc.name,
    dataCenterLocation: dc.location,
    isSvcOrg: fromFlag(org.isSvcOrg),
    apiToken: role === 'Administrator' ? secrets.open(org.apiCryptoToken) : null,
    securityRules: view.securityRules.map(toSecurityRule),
    captureOnFailedRecordsForReprocessing: fromFlag(org.captureOnFailedRecordsForReprocessing),
    captureDuringCloudAppRuns: fromFlag(org.captureDuringCloudAppRuns),
    captureDuringLocalAgentAppRuns: fromFlag(org.captureDuringLocalAgentAppRuns),
    isSourceDataLocal: fromFlag(org.isSourceDataLocal),
    isAgentLogDownloadAllowed: fromFlag(org.isAgentLogDownloadAllowed),
    ...(status ?? {}),
  };
}

/** The Security Settings model: both tokens opened (only Administrators read it). */
export function toSecuritySettings(secrets: SecretBox, org: OrgRow): z.infer<typeof SecuritySettings> {
  return {
    apiCryptoToken: secrets.open(org.apiCryptoToken),
    eventSolutionAccessToken: secrets.open(org.eventSolutionAccessToken),
    captureOnFailedRecordsForReprocessing: fromFlag(org.captureOnFailedRecordsForReprocessing),
    captureDuringCloudAppRuns: fromFlag(org.captureDuringCloudAppRuns),
    captureDuringLocalAgentAppRuns: fromFlag(org.captureDuringLocalAgentAppRuns),
    isSourceDataLocal: fromFlag(org.isSourceDataLocal),
    isAgentLogDownloadAllowed: fromFlag(org.isAgentLogDownloadAllowed),
  };
}

/** A Setting: valueType 1 carries a decimal (as text), 2 a list of texts. */
export function toSetting(s: OrgSetting): Setting {
  return 'decimal' in s.value
    ? { id: s.id, name: s.name, valueType: 1, decimalValue: String(s.value.decimal), blobValue: null }
    : { id: s.id, name: s.name, valueType: 2, decimalValue: null, blobValue: [...s.value.blob] };
}
