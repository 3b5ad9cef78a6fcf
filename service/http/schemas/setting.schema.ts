import { z } from 'zod';

/** The Setting model of SPEC.md. valueType 1: the value is decimalValue; 2: it is blobValue. */
export const Setting = z.object({
  id: z.string(),
  name: z.string(),
  valueType: z.union([z.literal(1), z.literal(2)]),
  decimalValue: z.string().nullable().describe('the value when valueType is 1, as decimal text; otherwise null'),
  blobValue: z.array(z.string()).nullable().describe('the value when valueType is 2; otherwise null'),
});
export type Setting = z.infer<typeof Setting>;
