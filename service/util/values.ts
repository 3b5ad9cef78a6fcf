import { randomUUID } from 'node:crypto';

/** Now as ISO-8601 UTC text, the one timestamp format of the store and the API. */
export const nowIso = (): string => new Date().toISOString();

export const newId = (): string => randomUUID();

/** 0 or 1: a boolean as the store keeps it (SQLite has no boolean type). */
export type Flag = number;

export const toFlag = (b: boolean): Flag => (b ? 1 : 0);
export const fromFlag = (f: Flag | boolean | null | undefined): boolean => f === 1 || f === true;
