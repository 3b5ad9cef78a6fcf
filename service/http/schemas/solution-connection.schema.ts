import { z } from 'zod';

/** SPEC.md "Solution Connection summary": a Connection a Solution uses, with its Connector. */
export const SolutionConnectionSummary = z.object({
  connectionID: z.string().describe("the Connection's ID"),
  connectionName: z.string(),
  connectorID: z.string().describe("the Connector's ID (adapterTypeId in the Marketplace)"),
  connectorName: z.string(),
  connectorLogoUrl: z.string().nullable().describe("the Connector's logo, when its manifest names one"),
});
