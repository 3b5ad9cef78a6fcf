import http from 'node:http';
import { ZipArchive } from 'archiver';
import { ADMIN } from './service.js';

/** The problem+json answer of a refused log request, with the fields the log tests read. */
export interface Problem {
  code: string;
  detail: string;
  status: number;
}

/** What the Service answers while the Agent has not uploaded the archive yet. */
export const LOGS_NOT_AVAILABLE = 'The Agent Logs are not available.';

/** The bootstrap administrator's Basic authorization header, for {@link raw} calls. */
export const ADMIN_BASIC = `Basic ${Buffer.from(`${ADMIN.email}:${ADMIN.password}`).toString('base64')}`;

/** A real zip of one log file named `name`, made with archiver as the Agent makes it. */
export async function logZip(text: string, name = 'agent.log'): Promise<Buffer> {
  const archive = new ZipArchive({ zlib: { level: 9 } });
  const chunks: Buffer[] = [];
  archive.on('data', (c: Buffer) => chunks.push(c));
  const done = new Promise<void>((resolve, reject) => {
    archive.on('end', () => resolve());
    archive.on('error', reject);
  });
  archive.append(text, { name });
  await archive.finalize();
  await done;
  return Buffer.concat(chunks);
}

/** A raw HTTP call with a binary body and a binary answer (an upload, a download), optionally made `from` another local address. */
export function raw(
  url: string,
  opts: { method: string; headers?: Record<string, string>; body?: Buffer; from?: string },
): Promise<{ status: number; type: string; disposition: string; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: opts.method, headers: opts.headers, ...(opts.from ? { localAddress: opts.from } : {}) },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            type: String(res.headers['content-type'] ?? ''),
            disposition: String(res.headers['content-disposition'] ?? ''),
            body: Buffer.concat(chunks),
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}
