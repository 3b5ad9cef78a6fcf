import { z } from 'zod';

/**
 * `POST /v1/agent/register`: an Agent trades a single-use installation key for its identity.
 * The secret is returned once; the Service keeps only its hash.
 */
export const REGISTER_PATH = '/v1/agent/register';

export const RegisterRequest = z.strictObject({
  agentInstallationKey: z.string().min(1).max(200),
  machineName: z.string().trim().min(1).max(255),
  /** Operating-system service name and folder of the instance, numbered by installation order. */
  serviceName: z.string().trim().min(1).max(255),
  version: z.string().trim().min(1).max(50),
  /** Agent name; default the machine name, numbered for a second instance on the machine. */
  name: z.string().trim().min(1).max(255).optional(),
  /** Identifies this installation on this machine (see the clone rule). */
  fingerprint: z.string().min(8).max(200),
});
export type RegisterRequest = z.infer<typeof RegisterRequest>;

export const RegisterResponse = z.object({
  agentId: z.string(),
  /** Sent as `Authorization: Bearer <agentId>.<agentSecret>` on the channel and uploads. */
  agentSecret: z.string(),
  orgId: z.number().int(),
  name: z.string(),
  heartbeatMs: z.number().int().positive(),
});
export type RegisterResponse = z.infer<typeof RegisterResponse>;

/** `PUT /v1/agent/logs/{logId}`: the Agent uploads a log archive (application/zip). */
export const LOG_UPLOAD_PATH = (logId: string): string => `/v1/agent/logs/${encodeURIComponent(logId)}`;
