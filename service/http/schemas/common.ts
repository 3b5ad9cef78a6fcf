import type { FastifyReply } from 'fastify';
import { z } from 'zod';

const DECIMAL_INTEGER = /^-?[0-9]+$/;

/**
 * An integer query or path parameter from min to max. Only decimal digits (and a leading minus)
 * are read as a number: `0x2`, `1e1`, `1.0`, ` 2`, an empty value or a parameter given twice stay
 * text and are refused, where a plain number coercion would read them as 2, 10, 1 or 0.
 */
export const intParam = (min: number, max: number) =>
  z.preprocess(
    (v) => (typeof v === 'string' && DECIMAL_INTEGER.test(v) ? Number(v) : v),
    z.number({ error: 'must be a decimal integer (digits only)' }).int().min(min).max(max),
  );

/** The largest ID or offset: PostgreSQL's integer. */
export const MAX_INT = 2_147_483_647;

/** `{orgId}`: the integer Organization ID of every `/v1/orgs/{orgId}/…` path. */
export const OrgParams = z.object({ orgId: intParam(1, MAX_INT) });

/** A GUID in a path or body. */
export const Guid = z.guid();

/** A boolean query parameter (`true`/`false`, `1`/`0`, any case). */
export const qbool = (fallback: boolean) => z.stringbool().default(fallback);

/** limit (default 100, at most 1000) and offset (default 0) of every list. */
export const PageQuery = z.object({
  limit: intParam(0, 1000).default(100),
  offset: intParam(0, MAX_INT).default(0),
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
