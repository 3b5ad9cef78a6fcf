import type { PropertyType } from '../../src/connectors/sdk.js';

/** A csv file as an entity (schema.ts describes one): its path, names and columns. */
export interface CsvColumn {
  /** The header text. */
  name: string;
  fullName: string;
  type: PropertyType;
  isPrimaryKey: boolean;
  size: number;
  description: string;
}

export interface CsvEntity {
  /** Absolute path. */
  file: string;
  fileName: string;
  name: string;
  fullName: string;
  description: string;
  columns: CsvColumn[];
  /** True when the types were inferred rather than read from the schema file. */
  inferred: boolean;
}
