import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { once } from 'node:events';
import {
  ConnectorError,
  isFullName,
  type CallContext,
  type EnsureEntityOptions,
  type EnsureEntityResult,
  type EntityMetadata,
} from '../../src/connectors/sdk.js';
import { formatRow } from './parser.js';
import { readRows, fileError } from './reader.js';
import type { CsvEntity } from './entity.js';
import { describeFile, readSchemaFile, writeSchemaFile, type SchemaFile } from './schema.js';
import { entityMetadata } from './metadata.js';
import type { CsvProps } from './properties.js';

function schemaEntry(
  fields: { name: string; type: CsvEntity['columns'][number]['type']; primaryKey: boolean; size: number }[],
): SchemaFile['entities'][string] {
  return { description: '', fields: fields.map((f) => ({ ...f, description: '' })) };
}

/**
 * A replication target: `<fullName>.csv` with the source's fields as header, described in the
 * schema file (types and primary key). An existing file gains the fields it lacks (an empty column
 * at the end, by a streamed rewrite); fields are never removed or retyped.
 */
export async function ensureEntity(
  source: EntityMetadata,
  options: EnsureEntityOptions,
  props: CsvProps,
  ctx: CallContext,
): Promise<{ result: EnsureEntityResult; entity: CsvEntity }> {
  const fullName = options.entity ?? source.fullName;
  if (!isFullName(fullName)) throw new ConnectorError('InvalidQuery', `${fullName} is not a valid entity fullName.`);
  const fileName = `${fullName}${props.extension}`;
  const file = path.join(props.folder, fileName);
  const schema = await readSchemaFile(props);
  const exists = await fsp.stat(file).then(
    () => true,
    (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return false;
      throw fileError(err, file);
    },
  );
  if (!exists) {
    schema.entities[fileName] = schemaEntry(
      source.fields.map((f) => ({ name: f.fullName, type: f.propertyType, primaryKey: f.isPrimaryKey, size: f.size })),
    );
    await fsp.writeFile(
      file,
      props.hasHeader
        ? formatRow(
            source.fields.map((f) => f.fullName),
            props.delimiter,
          )
        : '',
      { encoding: props.encoding },
    );
    await writeSchemaFile(props, schema);
    const entity = await describeFile(fileName, fullName, props, schema);
    return { entity, result: { entity: entityMetadata(entity), created: true, addedFields: [], mismatchedFields: [] } };
  }
  const current = await describeFile(fileName, fullName, props, schema);
  const have = new Map(current.columns.map((c) => [c.fullName, c]));
  const missing = source.fields.filter((f) => !have.has(f.fullName));
  const mismatchedFields = source.fields
    .filter((f) => have.has(f.fullName) && have.get(f.fullName)?.type !== f.propertyType)
    .map((f) => ({
      field: f.fullName,
      sourceType: f.propertyType,
      targetType: have.get(f.fullName)?.type ?? 'string',
    }));
  if (missing.length > 0) {
    await addColumns(
      current,
      missing.map((f) => f.fullName),
      props,
      ctx,
    );
    schema.entities[fileName] = schemaEntry([
      ...current.columns.map((c) => ({ name: c.name, type: c.type, primaryKey: c.isPrimaryKey, size: c.size })),
      ...missing.map((f) => ({ name: f.fullName, type: f.propertyType, primaryKey: false, size: f.size })),
    ]);
    await writeSchemaFile(props, schema);
  }
  const entity = await describeFile(fileName, fullName, props, schema);
  return {
    entity,
    result: {
      entity: entityMetadata(entity),
      created: false,
      addedFields: missing.map((f) => f.fullName),
      mismatchedFields,
    },
  };
}

async function addColumns(entity: CsvEntity, names: string[], props: CsvProps, ctx: CallContext): Promise<void> {
  const tmp = path.join(path.dirname(entity.file), `.${path.basename(entity.file)}.${process.pid}.ferry-tmp`);
  const ws = fs.createWriteStream(tmp, { encoding: props.encoding });
  const width = entity.columns.length;
  try {
    let header = props.hasHeader;
    for await (const rows of readRows(entity.file, props, ctx.signal)) {
      let out = '';
      for (const row of rows) {
        const padded = row.length < width ? [...row, ...new Array<null>(width - row.length).fill(null)] : row;
        out += formatRow(header ? [...padded, ...names] : [...padded, ...names.map(() => null)], props.delimiter);
        header = false;
      }
      if (!ws.write(out)) await once(ws, 'drain');
    }
    ws.end();
    await once(ws, 'finish');
    await fsp.rename(tmp, entity.file);
  } catch (err) {
    ws.destroy();
    await fsp.rm(tmp, { force: true });
    throw fileError(err, entity.file);
  }
}
