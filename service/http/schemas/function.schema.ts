import { z } from 'zod';
import { FUNCTION_CATEGORIES } from '../../../src/maps/formula/catalogue.js';
import { Timestamp } from './common.js';

/** The Function model of SPEC.md: one function of the Map formula language. */
export const FormulaFunctionModel = z.object({
  id: z.string(),
  name: z.string(),
  categoryName: z.enum(FUNCTION_CATEGORIES),
  descriptionURL: z.string().describe('absolute URL of the public HTML page describing the function'),
  lastModificationDate: Timestamp,
});
export type FormulaFunctionModel = z.infer<typeof FormulaFunctionModel>;
