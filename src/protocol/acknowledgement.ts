import { z } from 'zod';

/**
 * The result of a command whose reply only acknowledges it (the work, or its outcome, comes
 * later or is not the Service's to read). The Agent answers with `T`; the Service reads nothing
 * of it, so any result — or none, as Agents and tools that answer `{re, ok: true}` send — is the
 * acknowledgement, and what the Service gets is `void`.
 */
export function acknowledgement<T>(): z.ZodPipe<z.ZodCustom<T, T>, z.ZodTransform<void, T>> {
  return z.custom<T>(() => true).transform((): void => undefined);
}
