import { z } from 'zod';
import { parseInstant } from '../../history/query.js';
import { decimal, Guid, MAX_INT } from './common.js';
import { SolutionParams } from './solution.schema.js';

export const SolutionLogParams = SolutionParams.extend({ logId: Guid });

/** A full ISO-8601 date-time with its offset: read to the millisecond (log lines are that fine). */
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/i;

/** A date or date-time (UTC unless it has an offset), as History's laterThanDate takes it, with its milliseconds. */
const Instant = z
  .string()
  .max(64)
  .transform((text, ctx) => {
    const iso = ISO_INSTANT.test(text.trim()) ? new Date(text.trim()) : undefined;
    const at = iso && !Number.isNaN(iso.getTime()) ? iso : parseInstant(text);
    if (at === undefined) {
      ctx.addIssue({
        code: 'custom',
        message: 'must be a date (2024-1-31) or a date and time (2024-01-31T10:00:00Z)',
        input: text,
      });
      return z.NEVER;
    }
    return at;
  });

export const SolutionLogQuery = z.object({
  historyId: z
    .union([decimal(z.number().int().positive().max(MAX_INT)), Guid])
    .optional()
    .describe('only the lines of this execution: its History id, or its processExecutionId'),
  since: Instant.optional().describe('only lines logged at or after this instant (UTC unless an offset is given)'),
});
