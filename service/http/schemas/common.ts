import type { FastifyReply } from 'fastify';
import { z } from 'zod';

const DECIMAL_INTEGER = /^-?[0-9]+$/;

/**
 * An integer query or path parameter: `schema` (a z.number with its bounds and default) behind a
 * check that the text is decimal digits (and a leading minus). `0x2`, `1e1`, `1.0`, ` 2`, an empty
 * value or a parameter given twice (an array) are refused, where a plain number coercion would
 * read them as 2, 10, 1 or 0. The OpenAPI document shows `schema` itself.
 */
export const decimal = <T extends z.ZodType>(schema: T) =>
  z.preprocess((v, ctx) => {
    if (v === undefined || typeof v === 'number') return v;
    if (typeof v === 'string' && DECIMAL_INTEGER.test(v)) return Number(v);
    ctx.addIssue({ code: 'custom', message: 'must be a decimal integer (digits only, given once)', input: v });
    return v;
  }, schema);

/** The largest ID or offset: PostgreSQL's integer. */
export const MAX_INT = 2_147_483_647;

/** `{orgId}`: the integer Organization ID of every `/v1/orgs/{orgId}/…` path. */
export const OrgParams = z.object({ orgId: decimal(z.number().int().positive().max(MAX_INT)) });

/** A GUID in a path or body. */
export const Guid = z.guid();

/** A boolean query parameter (`true`/`false`, `1`/`0`, any case). */
export const qbool = (fallback: boolean) => z.stringbool().default(fallback);

/** limit (default 100, at most 1000) and offset (default 0) of every list. */
export const PageQuery = z.object({
  limit: decimal(z.number().int().min(0).max(1000).default(100)),
  offset: decimal(z.number().int().min(0).max(MAX_INT).default(0)),
});
export type Page = z.infer<typeof PageQuery>;

/** Sends a list as a bare array with its total in the Total-Count header. */
export function sendList<T>(reply: FastifyReply, items: T[], total: number): T[] {
  void reply.header('Total-Count', String(total));
  return items;
}

/** 201 Created with a Location header. */
export function sendCreated<T>(reply: FastifyReply, location: string, body: T): T {
  void reply.code(201).header('Location', location);
  return body;
}

/** Pages an in-memory list (only for lists that are small by nature). */
export function pageOf<T>(items: T[], page: Page): T[] {
  return items.slice(page.offset, page.offset + page.limit);
}

/** A short, bounded text field (names, labels). */
export const Name = z.string().trim().min(1).max(255);
export const Text = z.string().max(4000);

/** Timestamps the API returns. */
export const Timestamp = z.string().describe('ISO-8601 UTC date-time');
