import { z } from 'zod';
import { Name } from './common.js';
import { SecurityRuleInput } from './org.schema.js';

/** The body of `POST /v1/register`: a customer Organization an operator creates. */
export const RegisterInput = z.strictObject({
  orgName: Name,
  dataCenterId: z.number().int().nullable().optional(),
  securityRules: z.array(SecurityRuleInput).max(500),
  /** The ID or e-mail of the user who becomes the Organization's Administrator; default the caller. */
  userId: z.string().trim().min(1).max(320).optional(),
  /** IDs or names of Connectors to install. */
  connectors: z.array(z.string().trim().min(1).max(255)).max(200).optional(),
  /** `FERRY-<IS|RS|MS>-<records>`: one-year Subscriptions replacing the trial of their type. */
  subscriptionSkus: z.array(z.string().trim().min(1).max(64)).max(20).optional(),
});
export type RegisterInput = z.infer<typeof RegisterInput>;
