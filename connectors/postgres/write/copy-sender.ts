import type { PoolClient } from 'pg';
import type { ConnectorRecord } from '../../../src/connectors/sdk.js';
import { binaryWriter, encodeBinary } from '../binary-copy.js';
import { CopyIn, copyEncoder, type CopyEncode } from '../copy.js';
import type { Group } from './groups.js';

/**
 * Sends the records `ks` (positions in the group) of a group through a COPY statement: in the
 * binary format when every column and value has a binary form (binary-copy.ts), else as text.
 * `streamed` (only outside a transaction): the binary data is sent as it is encoded, so the server
 * works on the first rows while the rest are encoded; a value without a binary form then abandons
 * that COPY (it fails, as a statement of its own) and the text format runs.
 */
export function copySender(
  g: Group,
  batch: readonly ConnectorRecord[],
  streamed = false,
): (client: PoolClient, sql: string, ks: number[]) => Promise<number> {
  const names = g.cols.map((c) => c.fullName);
  const writers = g.cols.map((c) => binaryWriter(c.typname));
  const binary = writers.every((f) => f !== undefined) ? writers : undefined;
  const enc = g.cols.map((c) => copyEncoder(c.type));
  const n = names.length;
  const encode = (k: number): string => {
    const rec = batch[g.indices[k] as number] as ConnectorRecord;
    let line = (enc[0] as CopyEncode)(rec[names[0] as string]);
    for (let j = 1; j < n; j++) line += `\t${(enc[j] as CopyEncode)(rec[names[j] as string])}`;
    return `${line}\n`;
  };
  return async (client, sql, ks) => {
    const records = ks.map((k) => batch[g.indices[k] as number]);
    if (binary && streamed) {
      let textOnly = false;
      const streaming = new CopyIn(`${sql} WITH (FORMAT binary)`, (send) => {
        if (encodeBinary(records, names, binary, send)) return;
        textOnly = true;
        throw new Error('a value has no binary form');
      });
      client.query(streaming);
      try {
        return await streaming.done;
      } catch (err) {
        if (!textOnly) throw err;
      }
    }
    const data = binary && !streamed ? encodeBinary(records, names, binary) : undefined;
    const copy = data
      ? new CopyIn(`${sql} WITH (FORMAT binary)`, (send) => {
          for (const b of data) send(b);
        })
      : new CopyIn(sql, (send) => {
          let chunk = '';
          for (const k of ks) {
            chunk += encode(k);
            if (chunk.length >= 262144) {
              send(chunk);
              chunk = '';
            }
          }
          if (chunk) send(chunk);
        });
    client.query(copy);
    return copy.done;
  };
}
