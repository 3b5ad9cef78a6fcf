import fs from 'node:fs';
import { gunzipSync } from 'node:zlib';
import os from 'node:os';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { loadMetadataCommand } from '../../../src/agent/commands/load-metadata.command.js';
import { WorkRegistry } from '../../../src/agent/work.js';
import { ConnectorHost } from '../../../src/connectors/host.js';
import type { ConnectionMetadata } from '../../../src/connectors/sdk.js';
import { PackedMetadata } from '../../../src/protocol/metadata.js';

const CONNECTORS = path.resolve(import.meta.dirname, '../../../connectors');
const SQLITE = 'f86c6485-8328-4562-b3b2-aa2dcab541ad';

describe('the loadMetadata command', () => {
  const log = pino({ level: 'silent' });
  const host = new ConnectorHost({ dir: CONNECTORS, log });
  const loaded = host.loadAll().then(() => host);
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-load-md-'));
  const file = path.join(folder, 'shop.db');
  const db = new SQLite(file);
  db.exec(
    'CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL); CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id), total REAL);',
  );
  db.close();
  const command = (over: Record<string, unknown> = {}) => ({
    id: 'm1',
    type: 'loadMetadata' as const,
    connectionId: 'conn-1',
    connectorId: SQLITE,
    properties: { file },
    ...over,
  });
  afterAll(async () => {
    await host.close();
    fs.rmSync(folder, { recursive: true, force: true });
  });

  it("answers the SQLite catalogue's entities, fields and foreign-key relationship", async () => {
    const work = new WorkRegistry();
    const md = (await loadMetadataCommand({ work, log, host: () => loaded })(command())) as ConnectionMetadata;
    expect(md.entities.map((e) => e.fullName).sort()).toEqual(['customers', 'orders']);
    const orders = md.entities.find((e) => e.fullName === 'orders');
    expect(orders?.fields.map((f) => f.fullName)).toEqual(['id', 'customer_id', 'total']);
    expect(orders?.fields[0]?.isPrimaryKey).toBe(true);
    expect(orders?.relationships).toEqual([
      expect.objectContaining({
        thisEntityFullName: 'orders',
        relatedEntityFullName: 'customers',
        thisProperties: ['customer_id'],
        relatedProperties: ['id'],
        relationshipType: 'ManyToOne',
      }),
    ]);
    expect(md.actions.map((a) => a.action)).toContain('Query');
    expect(work.count).toBe(0);
  });

  it('refuses more entities or bytes than allowed with CON_METADATA_TOO_LARGE', async () => {
    await expect(
      loadMetadataCommand({ work: new WorkRegistry(), log, host: () => loaded, maxEntities: 1 })(
        command({ reload: true }),
      ),
    ).rejects.toMatchObject({ code: 'CON_METADATA_TOO_LARGE' });
    await expect(
      loadMetadataCommand({ work: new WorkRegistry(), log, host: () => loaded, maxBytes: 100 })(command()),
    ).rejects.toMatchObject({ code: 'CON_METADATA_TOO_LARGE', details: { limit: 100 } });
  });

  it('compresses an answer that does not fit in one channel message, losing nothing', async () => {
    const plain = await loadMetadataCommand({ work: new WorkRegistry(), log, host: () => loaded })(command());
    const size = Buffer.byteLength(JSON.stringify(plain));
    const packed = await loadMetadataCommand({ work: new WorkRegistry(), log, host: () => loaded, maxBytes: size - 1 })(
      command(),
    );
    const parsed = PackedMetadata.parse(packed);
    expect(parsed.data.length).toBeLessThan(size);
    expect(JSON.parse(gunzipSync(Buffer.from(parsed.data, 'base64')).toString('utf8'))).toEqual(plain);
  });

  it('fails with CON_NOT_FOUND for an unknown Connector and AGT_DRAINING while draining', async () => {
    await expect(
      loadMetadataCommand({ work: new WorkRegistry(), log, host: () => loaded })(
        command({ connectorId: '3f2504e0-4f89-41d3-9a0c-0305e82c3301' }),
      ),
    ).rejects.toMatchObject({ code: 'CON_NOT_FOUND' });
    const work = new WorkRegistry();
    work.drain('restart');
    await expect(loadMetadataCommand({ work, log, host: () => loaded })(command())).rejects.toMatchObject({
      code: 'AGT_DRAINING',
    });
  });
});
