import fs from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import {
  ConnectorError,
  PROPERTY_TYPES,
  coerceValue,
  INVALID,
  uniqueFullNames,
  toFullName,
  type PropertyType,
} from '../../src/connectors/sdk.js';
import type { CsvColumn, CsvEntity } from './entity.js';
import { readRows, fileError } from './reader.js';
import type { CsvProps } from './properties.js';

/**
 * How a csv folder describes its entities. One file is one entity; its header names the fields.
 * Types and keys come from the schema file when it describes the file, else they are inferred
 * from the first `inferRows` rows.
 *
 * schema.json:
 * ```json
 * { "entities": { "people.csv": { "fields": [
 *     { "name": "id", "type": "integer", "primaryKey": true },
 *     { "name": "email", "type": "string", "size": 200 } ] } } }
 * ```
 */
const SchemaField = z.object({
  name: z.string().min(1),
  type: z.enum(PROPERTY_TYPES).default('string'),
  primaryKey: z.boolean().default(false),
  size: z.number().int().min(0).default(0),
  description: z.string().default(''),
});
const SchemaFile = z.object({
  entities: z
    .record(z.string(), z.object({ fields: z.array(SchemaField), description: z.string().default('') }))
    .default({}),
});
export type SchemaFile = z.infer<typeof SchemaFile>;

export async function readSchemaFile(props: CsvProps): Promise<SchemaFile> {
  let text: string;
  try {
    text = await fs.readFile(props.schemaFile, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { entities: {} };
    throw fileError(err, props.schemaFile);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ConnectorError('InvalidProperties', `The schema file ${props.schemaFile} is not valid JSON.`);
  }
  const parsed = SchemaFile.safeParse(json);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    throw new ConnectorError(
      'InvalidProperties',
      `The schema file ${props.schemaFile} is not valid: ${first ? `${first.path.join('.')}: ${first.message}` : 'unknown problem'}.`,
    );
  }
  return parsed.data;
}

export async function writeSchemaFile(props: CsvProps, schema: SchemaFile): Promise<void> {
  const tmp = `${props.schemaFile}.${process.pid}.tmp`;
  await fs.writeFile(tmp, `${JSON.stringify(schema, null, 2)}\n`);
  await fs.rename(tmp, props.schemaFile);
}

/** The entity files of the folder, sorted by name. */
export async function listEntityFiles(props: CsvProps): Promise<string[]> {
  let names: string[];
  try {
    const entries = await fs.readdir(props.folder, { withFileTypes: true });
    names = entries.filter((e) => e.isFile() && e.name.toLowerCase().endsWith(props.extension)).map((e) => e.name);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT')
      throw new ConnectorError('Unreachable', `The folder ${props.folder} does not exist or is not mounted.`, {
        nativeCode: code,
      });
    throw fileError(err, props.folder);
  }
  return names.sort();
}

/** Entity name of a file: its name without the extension. */
export function entityNameOf(fileName: string, props: CsvProps): string {
  return fileName.slice(0, fileName.length - props.extension.length);
}

/** Describes one file: header, then types from the schema file or inferred. */
export async function describeFile(
  fileName: string,
  fullName: string,
  props: CsvProps,
  schema: SchemaFile,
): Promise<CsvEntity> {
  const file = path.join(props.folder, fileName);
  const declared = schema.entities[fileName];
  const sample: (string | null)[][] = [];
  const wanted = declared ? 1 : props.inferRows + 1;
  for await (const rows of readRows(file, props)) {
    for (const r of rows) {
      sample.push(r);
      if (sample.length >= wanted) break;
    }
    if (sample.length >= wanted) break;
  }
  const width = Math.max(sample[0]?.length ?? 0, declared?.fields.length ?? 0);
  const headers: string[] = props.hasHeader
    ? (sample[0] ?? declared?.fields.map((f) => f.name) ?? []).map((h, i) => h ?? `Column${i + 1}`)
    : Array.from({ length: width }, (_, i) => declared?.fields[i]?.name ?? `Column${i + 1}`);
  const fullNames = uniqueFullNames(headers);
  const data = props.hasHeader ? sample.slice(1) : sample;
  const columns: CsvColumn[] = headers.map((h, i) => {
    const d =
      declared?.fields.find((f) => f.name === h) ?? declared?.fields.find((f) => toFullName(f.name) === fullNames[i]);
    return {
      name: h,
      fullName: fullNames[i] as string,
      type: d
        ? d.type
        : inferType(
            data.map((r) => r[i] ?? null),
            props.inferRows,
          ),
      isPrimaryKey: d?.primaryKey ?? false,
      size: d?.size ?? 0,
      description: d?.description ?? '',
    };
  });
  return {
    file,
    fileName,
    name: entityNameOf(fileName, props),
    fullName,
    description: declared?.description ?? '',
    columns,
    inferred: !declared,
  };
}

const INFER_ORDER: PropertyType[] = ['integer', 'double', 'boolean', 'date', 'datetime'];

/** The narrowest type every non-empty sample value fits; `string` when none or when inference is off. */
export function inferType(values: (string | null)[], inferRows: number): PropertyType {
  if (inferRows === 0) return 'string';
  const present = values.filter((v): v is string => v !== null && v !== '');
  if (present.length === 0) return 'string';
  // Leading zeros (zip codes, account numbers) are text: a number would lose them.
  if (present.some((v) => /^[+-]?0\d/.test(v))) return 'string';
  for (const t of INFER_ORDER) {
    // 0/1 columns are integers, not booleans: only words make a boolean.
    if (t === 'boolean' && present.every((v) => /^\d+$/.test(v))) continue;
    if (present.every((v) => coerceValue(t, v) !== INVALID)) return t;
  }
  return 'string';
}
