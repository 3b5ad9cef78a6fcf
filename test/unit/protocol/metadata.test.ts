import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import {
  ConnectionMetadata,
  MAX_METADATA_ANSWER_BYTES,
  MAX_METADATA_ENTITIES,
  MAX_UNPACKED_METADATA_BYTES,
  PackedMetadata,
  packMetadata,
  unpackMetadata,
  type Action,
  type EntityMetadata,
  type Field,
} from '../../../src/protocol/metadata.js';

const QUERY: Action = {
  action: 'Query',
  operationName: 'Query',
  blockType: 'Starter',
  supportsBulk: true,
  supportsConstraints: true,
  supportsInput: false,
  supportsLookupConditions: false,
  supportsRelations: true,
  supportsMultipleRecordOperations: false,
  supportsSequences: false,
};
const field = (fullName: string, ordinal: number, over: Partial<Field> = {}): Field => ({
  name: fullName,
  fullName,
  originalName: fullName,
  description: '',
  isPrimaryKey: ordinal === 1,
  nullable: ordinal !== 1,
  size: 0,
  ordinal,
  propertyType: 'string',
  nativeType: 'TEXT',
  hasDefault: false,
  requiredInActionInput: false,
  usedInLookupCondition: true,
  usedInActionInput: true,
  usedInQueryConstraint: true,
  usedInQuerySelect: true,
  ...over,
});
const entity = (fullName: string, fields: Field[], description = ''): EntityMetadata => ({
  id: fullName,
  name: fullName,
  fullName,
  originalName: fullName,
  description,
  isHidden: false,
  actions: [QUERY],
  fields,
  relationships: [],
});

/** A document with every member set, the optional ones included. */
const DOC: ConnectionMetadata = {
  actions: [QUERY],
  entities: [
    {
      ...entity('orders', [
        field('id', 1, { propertyType: 'integer', size: 8, nativeType: 'INTEGER', hasDefault: true }),
        field('total', 2, { propertyType: 'decimal', size: 12, scale: 2, nativeType: 'DECIMAL(12,2)' }),
        field('customer_id', 3, { propertyType: 'integer', size: 8, nativeType: 'INTEGER' }),
      ]),
      relationships: [
        {
          name: 'fk_customer',
          fullName: 'fk_customer',
          description: 'orders(customer_id) references customers(id)',
          path: 'orders.customers',
          thisEntityFullName: 'orders',
          relatedEntityFullName: 'customers',
          thisProperties: ['customer_id'],
          relatedProperties: ['id'],
          relationshipType: 'ManyToOne',
          parentId: 'orders',
          uniqueId: '6f1c1f5e-1b51-4f5e-9a0e-2f7f5c3e9d11',
        },
      ],
    },
  ],
};

/** A document of `n` entities with long descriptions: its JSON is about `n` × 2.3 kB. */
const wide = (n: number): ConnectionMetadata => ({
  actions: [QUERY],
  entities: Array.from({ length: n }, (_, i) =>
    entity(`t${i}`, [field('id', 1), field('name', 2)], `table ${i} `.repeat(200)),
  ),
});

describe('the metadata contract on the channel', () => {
  it('sends a document that fits in one message as is', () => {
    const out = packMetadata(DOC);
    expect(out).toEqual({ packed: false, answer: DOC, bytes: Buffer.byteLength(JSON.stringify(DOC)) });
    expect(ConnectionMetadata.parse(unpackMetadata(JSON.parse(JSON.stringify(out.answer)))).entities).toEqual(
      DOC.entities,
    );
  });

  it('packs a document larger than one message as gzip+base64, and unpacking gives back every member', () => {
    const big = wide(600);
    const out = packMetadata(big);
    expect(out.bytes).toBeGreaterThan(MAX_METADATA_ANSWER_BYTES);
    expect(out.packed).toBe(true);
    if (!out.packed) return;
    expect(out.fits).toBe(true);
    expect(PackedMetadata.parse(out.answer).encoding).toBe('gzip+base64');
    expect(out.compressed).toBe(out.answer.data.length);
    expect(out.compressed).toBeLessThan(out.bytes / 10);
    // Through JSON, as over the channel.
    const back = ConnectionMetadata.parse(unpackMetadata(JSON.parse(JSON.stringify(out.answer))));
    expect(back).toEqual(big);
  });

  it('packs exactly when the JSON does not fit in the limit given, and says when even the packed data does not', () => {
    const bytes = Buffer.byteLength(JSON.stringify(DOC));
    expect(packMetadata(DOC, bytes).packed).toBe(false);
    const packed = packMetadata(DOC, bytes - 1);
    expect(packed).toMatchObject({ packed: true, fits: true });
    expect(ConnectionMetadata.parse(unpackMetadata(packed.answer))).toEqual(DOC);
    expect(packMetadata(DOC, 10)).toMatchObject({ packed: true, fits: false });
  });

  it('passes an answer that is not packed through unchanged', () => {
    expect(unpackMetadata(DOC)).toBe(DOC);
    const odd = { encoding: 'zstd', data: 'x' };
    expect(unpackMetadata(odd)).toBe(odd);
  });

  it(`refuses to uncompress more than ${MAX_UNPACKED_METADATA_BYTES / 1024 / 1024} MiB`, () => {
    // A gzip bomb: gzip members of 1 MiB of zeros each (about 1 kB packed), one more than the cap holds.
    const member = gzipSync(Buffer.alloc(1024 * 1024), { level: 9 });
    const chunks = Array.from({ length: MAX_UNPACKED_METADATA_BYTES / (1024 * 1024) + 1 }, () => member);
    const data = Buffer.concat(chunks).toString('base64');
    expect(data.length).toBeLessThan(MAX_METADATA_ANSWER_BYTES);
    let thrown: unknown;
    try {
      unpackMetadata({ encoding: 'gzip+base64', data });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toMatchObject({ code: 'ERR_BUFFER_TOO_LARGE' });
  });
});

describe('the metadata contract as the Service parses it', () => {
  it('reads a document cached before nativeType, hasDefault, scale, parentId and uniqueId were kept, with their defaults', () => {
    // What the Service stored until then: the members it knew, nothing more.
    const old = JSON.parse(JSON.stringify(DOC), (key: string, value: unknown) =>
      ['nativeType', 'hasDefault', 'scale', 'parentId', 'uniqueId'].includes(key) ? undefined : value,
    ) as unknown;
    expect(JSON.stringify(old)).not.toMatch(/nativeType|hasDefault|scale|parentId|uniqueId/);
    const [e] = ConnectionMetadata.parse(old).entities;
    expect(e?.fields.map((f) => [f.fullName, f.nativeType, f.hasDefault, f.scale])).toEqual([
      ['id', '', false, undefined],
      ['total', '', false, undefined],
      ['customer_id', '', false, undefined],
    ]);
    expect(e?.relationships.map((r) => [r.parentId, r.uniqueId])).toEqual([['', '']]);
    // Everything else reads as it was sent.
    const strip = <T extends object>(o: T, keys: string[]) =>
      Object.fromEntries(Object.entries(o).filter(([k]) => !keys.includes(k)));
    const [sent] = DOC.entities;
    expect(e?.fields.map((f) => strip(f, ['nativeType', 'hasDefault', 'scale']))).toEqual(
      sent?.fields.map((f) => strip(f, ['nativeType', 'hasDefault', 'scale'])),
    );
    expect(e?.relationships.map((r) => strip(r, ['parentId', 'uniqueId']))).toEqual(
      sent?.relationships.map((r) => strip(r, ['parentId', 'uniqueId'])),
    );
  });

  it('keeps every member a Connector sends, and drops none', () => {
    expect(ConnectionMetadata.parse(JSON.parse(JSON.stringify(DOC)))).toEqual(DOC);
  });

  it("refuses values outside the SDK's enumerations and beyond the bounds", () => {
    const bad = (over: Record<string, unknown>) => ({
      actions: [],
      entities: [{ ...entity('x', []), fields: [{ ...field('id', 1), ...over }] }],
    });
    expect(ConnectionMetadata.safeParse(bad({})).success).toBe(true);
    expect(ConnectionMetadata.safeParse(bad({ propertyType: 'Int64' })).success).toBe(false);
    expect(ConnectionMetadata.safeParse(bad({ name: 'n'.repeat(1001) })).success).toBe(false);
    expect(ConnectionMetadata.safeParse(bad({ nativeType: 't'.repeat(1001) })).success).toBe(false);
    expect(ConnectionMetadata.safeParse(bad({ scale: 1.5 })).success).toBe(false);
    expect(ConnectionMetadata.safeParse({ actions: [{ ...QUERY, blockType: 'Source' }], entities: [] }).success).toBe(
      false,
    );
    expect(ConnectionMetadata.safeParse({ actions: [{ ...QUERY, action: 'Merge' }], entities: [] }).success).toBe(
      false,
    );
    const many = {
      actions: [],
      entities: Array.from({ length: MAX_METADATA_ENTITIES + 1 }, (_, i) => entity(`t${i}`, [])),
    };
    expect(ConnectionMetadata.safeParse(many).success).toBe(false);
    expect(ConnectionMetadata.safeParse({ ...many, entities: many.entities.slice(1) }).success).toBe(true);
  });
});
