import { z } from 'zod';
import { INPUT_TYPES, SOLUTION_ROLES } from '../../../src/protocol/connector-manifest.js';
import { Guid, Name, OrgParams, PageQuery, Timestamp } from './common.js';

export const ConnectorParams = OrgParams.extend({ connectorId: Guid });
export const ConnectionParams = OrgParams.extend({ connectionId: Guid });
export const ConnectionTestParams = OrgParams.extend({ commandId: Guid });

/** The Connector model of SPEC.md. */
export const Connector = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  vendorName: z.string(),
  companyName: z.string(),
  version: z.string(),
  isCloudSupported: z.boolean(),
  connectionLimitReached: z.boolean(),
  uiName: z.string(),
  uiVersion: z.string(),
  solutionRoles: z.array(z.enum(SOLUTION_ROLES)),
});
export type Connector = z.infer<typeof Connector>;

export const UiOptions = z.object({
  helpURL: z.string().nullable(),
  uiDecorations: z.array(
    z.object({
      propertyName: z.string(),
      label: z.string(),
      inputType: z.enum(INPUT_TYPES),
      isRequired: z.boolean(),
      order: z.number().int(),
      options: z.array(z.object({ key: z.string(), value: z.string() })),
      defaultValue: z.string().optional(),
      description: z.string().optional(),
    }),
  ),
});
export type UiOptions = z.infer<typeof UiOptions>;

export const ConnectorListQuery = PageQuery.extend({
  /** Only Connectors installed on that Agent. */
  agentId: Guid.optional(),
  /** Exact name, case-insensitive. */
  name: z.string().max(255).optional(),
});

export const PreconnectParams = ConnectorParams.extend({ commandId: Guid });
export const PreconnectQuery = z.object({ agentId: Guid, isOauth: z.stringbool().default(false) });
export const PreconnectBody = z.strictObject({
  properties: z
    .array(z.object({ key: z.string().min(1).max(100), value: z.string().max(100_000).nullable().optional() }))
    .max(200),
});

/** SPEC.md's version lock; isLocked is the string true or false. */
export const VersionLock = z.object({
  isLocked: z.enum(['true', 'false']),
  version: z.string(),
  creationDate: Timestamp.nullable(),
  lastModificationDate: Timestamp.nullable(),
  modificationBy: z.string().nullable(),
});

export const UiOptionsQuery = z.object({
  agentId: z.string().max(100).optional(),
  version: z.string().max(50).optional(),
});

export const Property = z.object({ key: z.string(), value: z.string() });

/** The Connection model of SPEC.md; property values are encrypted with the crypto token (protected ones blank). */
export const Connection = z.object({
  id: z.string(),
  connectionId: z.string(),
  name: z.string(),
  alias: z.string(),
  connectorId: z.string(),
  connectorType: z.string(),
  color: z.string(),
  properties: z.array(Property),
  createDateTime: Timestamp,
  lastModificationDateTime: Timestamp,
  modificationBy: z.string().nullable(),
  usedInSolutions: z.string(),
  lastTestedAgentId: z
    .string()
    .nullable()
    .describe('the Agent that last tested the Connection with SUCCESS or loaded its metadata; null until one did'),
});
export type Connection = z.infer<typeof Connection>;

/** `#AARRGGBB` or `AARRGGBB`. */
export const Color = z.string().regex(/^#?[0-9A-Fa-f]{8}$/, 'a hexadecimal ARGB color such as #FF336699');
export const Alias = z.string().regex(/^[A-Za-z0-9]{1,255}$/, 'letters and digits only');

const PropertyInput = z.object({
  key: z.string().min(1).max(100),
  value: z.string().max(100_000).nullable().optional(),
});

/**
 * The Connection model clients send. Fields the Service owns are accepted so that a model read
 * with GET can be sent back unchanged, and ignored.
 */
export const ConnectionInput = z.strictObject({
  id: z.string().max(100).nullable().optional(),
  connectionId: z.string().max(100).nullable().optional(),
  name: Name,
  alias: Alias.nullable().optional(),
  connectorId: Guid,
  connectorType: z.string().max(255).nullable().optional(),
  color: Color,
  properties: z.array(PropertyInput).max(200).nullable().optional(),
  createDateTime: z.string().max(40).nullable().optional(),
  lastModificationDateTime: z.string().max(40).nullable().optional(),
  modificationBy: z.string().max(255).nullable().optional(),
  usedInSolutions: z.string().max(10_000).nullable().optional(),
  lastTestedAgentId: z.string().max(100).nullable().optional(),
});
export type ConnectionInput = z.infer<typeof ConnectionInput>;

export const ConnectionListQuery = PageQuery.extend({
  /** Only Connections whose Connector is installed on that Agent. */
  agentId: Guid.optional(),
  name: z.string().max(255).optional(),
});

export const TestQuery = z.object({ agentId: Guid });
/** A test started: `id` and `commandId` are the same value (clients of the original service read `id`). */
export const TestStarted = z.object({ id: z.string(), commandId: z.string() });
export type TestStarted = z.infer<typeof TestStarted>;
/** The status of a Connection test or preconnect: Requested, then Completed with the reply (SUCCESS or the error). */
export const TestStatus = z.object({
  id: z.string(),
  commandId: z.string(),
  name: z.string(),
  status: z.enum(['Requested', 'Completed']),
  reply: z.string().nullable(),
  /** Properties the Connector answered with (an OAuth step's tokens, say), values encrypted with the crypto token. */
  replyData: z.array(Property),
});
export type TestStatus = z.infer<typeof TestStatus>;
