import { z } from 'zod';
import { EXPORT_COLUMNS } from '../../history/export.js';
import { decimal, MAX_INT } from './common.js';
import { ExecutionParams } from './history.schema.js';

export const HistoryExportParams = ExecutionParams.extend({
  exportId: decimal(z.number().int().positive().max(MAX_INT)),
});

export const HistoryExportCreated = z.object({
  exportId: z
    .number()
    .int()
    .describe(
      "downloads the CSV of the execution's errors once with GET …/history/{id}/export/{exportId}, within an hour",
    ),
});

export const HistoryExportCsv = z
  .string()
  .describe(
    `text/csv (RFC 4180, CRLF): a header row ${EXPORT_COLUMNS.join(',')}, then one row per record error in order of arrival; ` +
      "`record` is the failed record's source fields as a JSON object when the run kept them in the cloud, else empty",
  );
