import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { packFiles, sha256, unpackFiles, writeFiles } from '../../../src/connectors/package.js';

const files = [
  { name: 'manifest.json', data: Buffer.from('{"id":"x"}\n') },
  { name: 'index.mjs', data: Buffer.from('export default {};\n'.repeat(100)) },
  { name: `lib/${'deep/'.repeat(25)}util.mjs`, data: Buffer.alloc(0) },
];

/** A tar header like packFiles writes, for hand-made bad archives. */
function entry(name: string, data: Buffer, type = '0'): Buffer {
  const h = Buffer.alloc(512);
  h.write(name, 0, 100);
  h.write('0000644\0', 100);
  h.write('0000000\0', 108);
  h.write('0000000\0', 116);
  h.write(`${data.length.toString(8).padStart(11, '0')}\0`, 124);
  h.write('00000000000\0', 136);
  h.write('        ', 148);
  h.write(type, 156);
  h.write('ustar\0', 257);
  h.write('00', 263);
  const sum = h.reduce((a, b) => a + b, 0);
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
  return Buffer.concat([h, data, Buffer.alloc((512 - (data.length % 512)) % 512)]);
}
const tgz = (...entries: Buffer[]) => gzipSync(Buffer.concat([...entries, Buffer.alloc(1024)]));

describe('Connector packages (.tgz)', () => {
  it('round-trips files, long paths included, and is a tar that tar itself reads', () => {
    const packed = packFiles(files);
    expect(unpackFiles(packed)).toEqual(files);
    expect(sha256(packed)).toBe(sha256(packFiles(files)));
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-pkg-'));
    try {
      fs.writeFileSync(path.join(dir, 'p.tgz'), packed);
      const listed = execFileSync('tar', ['tzf', path.join(dir, 'p.tgz')], { encoding: 'utf8' })
        .trim()
        .split('\n');
      expect(listed).toEqual(files.map((f) => f.name));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses paths outside the folder, links, bad checksums, and what is not gzip', () => {
    const bad = (data: Buffer) =>
      expect(() => unpackFiles(data)).toThrow(expect.objectContaining({ code: 'CON_PACKAGE_INVALID' }) as Error);
    bad(tgz(entry('../evil.js', Buffer.from('x'))));
    bad(tgz(entry('/etc/passwd', Buffer.from('x'))));
    bad(tgz(entry('a/../../b', Buffer.from('x'))));
    bad(tgz(entry('link', Buffer.alloc(0), '2')));
    bad(tgz(entry('dev', Buffer.alloc(0), '3')));
    const corrupt = entry('ok.js', Buffer.from('x'));
    corrupt[0] = 'p'.charCodeAt(0);
    bad(tgz(corrupt));
    bad(Buffer.from('not a package'));
    bad(tgz());
    expect(() => packFiles([{ name: '../x', data: Buffer.alloc(0) }])).toThrow(
      expect.objectContaining({ code: 'CON_PACKAGE_INVALID' }) as Error,
    );
  });

  it('writes the files into a new folder and never over an existing one', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-pkg-'));
    try {
      await writeFiles(path.join(dir, 'p'), files);
      expect(fs.readFileSync(path.join(dir, 'p', 'index.mjs'), 'utf8')).toBe(files[1]!.data.toString());
      await expect(writeFiles(path.join(dir, 'p'), files)).rejects.toThrow();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
