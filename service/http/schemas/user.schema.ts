import { z } from 'zod';
import { Guid, Name, Timestamp } from './common.js';

/** The roles of a member: SPEC.md's Administrator and User, plus Read-only. */
export const ROLE_TYPES = ['Administrator', 'User', 'ReadOnly'] as const;
export const RoleTypeSchema = z.enum(ROLE_TYPES);

/** The states an invitation can be stored in; an accepted one is removed. */
export const INVITATION_STATUSES = ['Pending', 'Declined'] as const;

/**
 * PostgreSQL text cannot hold U+0000: a string carrying it is bad input (400), never a store
 * failure. Every string of these models that reaches the store is checked.
 */
const nulFree = <T extends z.ZodType<string>>(schema: T): T =>
  schema.refine((s) => !s.includes('\u0000'), 'must not contain the NUL character (U+0000)');

/** A person's first or last name. */
const PersonName = nulFree(Name);

/** An email address as a login, member or invitee key (matched case-insensitively). */
export const Email = z.email().max(320);

/** An email in a path or query string: matched as given, so only bounded here. */
export const EmailParam = nulFree(z.string().min(1).max(320));

/** A new password: at least 8 characters, and no longer than Basic authentication accepts. */
export const Password = z.string().min(8, 'must have at least 8 characters').max(1024);

/** Optional text of a user record; null clears it. */
const OptionalText = nulFree(z.string().trim().max(255)).nullable().optional();

// ---------------------------------------------------------------------------------------------
// Organization side: members and invited users

/** A member of an Organization: SPEC.md's Organization User plus the member's role. */
export const OrgUser = z.object({
  email: z.string(),
  firstName: z.string().nullable(),
  lastName: z.string().nullable(),
  roleType: RoleTypeSchema,
});
export type OrgUser = z.infer<typeof OrgUser>;

/** Modifies a member; `email` names the member. Absent or null fields stay as they are. */
export const OrgUserInput = z.strictObject({
  email: Email,
  firstName: PersonName.nullable().optional(),
  lastName: PersonName.nullable().optional(),
  roleType: RoleTypeSchema.nullable().optional(),
});

export const EmailQuery = z.object({ email: EmailParam });

export const InvitedUser = z.object({
  email: z.string(),
  roleType: RoleTypeSchema,
  statusType: z.enum(INVITATION_STATUSES),
  invitedDate: Timestamp,
  /** The note sent with the invitation. */
  message: z.string().nullable(),
});
export type InvitedUser = z.infer<typeof InvitedUser>;

/**
 * The answer to an invitation. For a person who has no account yet it also carries the invitation's
 * ID and a one-time registration token: the only time the token is ever shown.
 */
export const InvitedUserCreated = InvitedUser.extend({
  invitationId: z.string().optional(),
  invitationToken: z
    .string()
    .optional()
    .describe('One-time token for POST /v1/users/invitations/{invitationId}/register; shown only here'),
});

export const InvitedUserInput = z.strictObject({
  email: Email,
  roleType: RoleTypeSchema,
  statusType: z.enum(INVITATION_STATUSES),
  message: nulFree(z.string().max(4000)).nullable().optional(),
  /** Set by the Service; accepted so that a model read with GET can be sent back. */
  invitedDate: z.string().max(64).nullable().optional(),
});

/** Modifies an invitation: its role and message. The status is the invitee's to change. */
export const InvitedUserPatch = z.strictObject({
  email: Email.optional(),
  roleType: RoleTypeSchema.optional(),
  statusType: z.enum(INVITATION_STATUSES).optional(),
  message: nulFree(z.string().max(4000)).nullable().optional(),
  invitedDate: z.string().max(64).nullable().optional(),
});

// ---------------------------------------------------------------------------------------------
// User side: own account, notification settings, invitations

const NOTIFICATION_FIELDS = {
  connectorActivationEmail: z.boolean().nullable(),
  eventFailedJobEmail: z.boolean().nullable(),
  failedJobEmail: z.boolean().nullable(),
  failedRowsEmail: z.boolean().nullable(),
  heartbeatEmail: z.boolean().nullable(),
  systemUpdateEmail: z.boolean().nullable(),
};

/**
 * SPEC.md's User model. The Organization fields, the role and the notification switches belong to
 * one membership: the first one on GET /v1/users, each one on the notification settings list.
 */
export const User = z.object({
  id: z.string(),
  email: z.string(),
  firstName: z.string().nullable(),
  lastName: z.string().nullable(),
  company: z.string().nullable(),
  country: z.string().nullable(),
  state: z.string().nullable(),
  postalCode: z.string().nullable(),
  phone: z.string().nullable(),
  jobTitle: z.string().nullable(),
  httpReferrer: z.string().nullable(),
  leadSource: z.string().nullable(),
  isApproved: z.boolean(),
  password: z.null().describe('always null'),
  omittedFields: z.string().nullable(),
  underPostDefaults: z.string().nullable(),
  orgId: z.number().int().nullable(),
  orgName: z.string().nullable(),
  tenantId: z.string().nullable(),
  roleType: RoleTypeSchema.nullable(),
  ...NOTIFICATION_FIELDS,
});
export type User = z.infer<typeof User>;

/** Every field of the User model as a client may send it back; what each route uses differs. */
const userModelFields = {
  id: z.string().max(64).nullable().optional(),
  email: Email.nullable().optional(),
  firstName: OptionalText,
  lastName: OptionalText,
  company: OptionalText,
  country: OptionalText,
  state: OptionalText,
  postalCode: OptionalText,
  phone: OptionalText,
  jobTitle: OptionalText,
  httpReferrer: nulFree(z.string().trim().max(2000)).nullable().optional(),
  leadSource: OptionalText,
  isApproved: z.boolean().nullable().optional(),
  password: Password.nullable().optional(),
  omittedFields: z.string().max(2000).nullable().optional(),
  underPostDefaults: z.string().max(2000).nullable().optional(),
  orgId: z.number().int().nullable().optional(),
  orgName: z.string().max(255).nullable().optional(),
  tenantId: z.string().max(64).nullable().optional(),
  roleType: RoleTypeSchema.nullable().optional(),
  connectorActivationEmail: z.boolean().nullable().optional(),
  eventFailedJobEmail: z.boolean().nullable().optional(),
  failedJobEmail: z.boolean().nullable().optional(),
  failedRowsEmail: z.boolean().nullable().optional(),
  heartbeatEmail: z.boolean().nullable().optional(),
  systemUpdateEmail: z.boolean().nullable().optional(),
};

/**
 * PUT /v1/users: email, firstName and lastName are required; `password`, when not null, sets a new
 * password. Membership fields and switches are accepted (a model read with GET goes back as is)
 * and ignored: notification settings have their own endpoint.
 */
export const UserInput = z.strictObject({
  ...userModelFields,
  email: Email,
  firstName: PersonName,
  lastName: PersonName,
});
export type UserInput = z.infer<typeof UserInput>;

/** PUT /v1/users/{userId}/notificationsettings: tenantId names the membership's Organization. */
export const NotificationSettingsInput = z.strictObject({
  ...userModelFields,
  orgName: nulFree(Name),
  tenantId: Guid,
});
export type NotificationSettingsInput = z.infer<typeof NotificationSettingsInput>;

export const UserParams = z.object({ userId: Guid });

/** SPEC.md's Invitation as the invited person sees it. `Accepted` only answers the accept call. */
export const Invitation = z.object({
  id: z.string(),
  orgId: z.number().int(),
  orgName: z.string(),
  sender: z.string(),
  message: z.string().nullable(),
  invitationDate: Timestamp,
  status: z.enum([...INVITATION_STATUSES, 'Accepted']),
  roleType: RoleTypeSchema,
});
export type Invitation = z.infer<typeof Invitation>;

export const InvitationParams = z.object({ inviteId: Guid });

export const RegisterInput = z.strictObject({
  token: z.string().min(1).max(200),
  firstName: PersonName,
  lastName: PersonName,
  password: Password,
});
