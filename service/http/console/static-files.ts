import fs from 'node:fs';
import path from 'node:path';
import type { FastifyReply } from 'fastify';
import { FerryError } from '../../../src/errors/ferry-error.js';

/** One built file of the console, held in memory (the whole console is a few hundred kilobytes). */
interface StaticFile {
  readonly body: Buffer;
  readonly type: string;
  /** Vite names the files under assets/ by their content's hash: cached for a year. */
  readonly immutable: boolean;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
};

/**
 * What the console's pages may load: their own scripts, styles and images, and calls to the same
 * origin (the /v1 API); no framing by another site.
 */
const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * The built console (`npm run build` writes it to dist/console): only the files found there are
 * served, by their exact relative path, so no request path reaches the file system. Read once, on
 * the first request that finds the folder.
 */
export class ConsoleFiles {
  #files: Map<string, StaticFile> | undefined;

  constructor(private readonly dir: string) {}

  /** Sends the file at `rel` (a path under /console/), index.html for a path with no dot (the console's own routes). */
  send(reply: FastifyReply, rel: string): FastifyReply {
    const files = this.#load();
    const file =
      files.get(rel === '' ? 'index.html' : rel) ?? (rel.includes('.') ? undefined : files.get('index.html'));
    if (!file) throw new FerryError('API_ROUTE_NOT_FOUND', `The console has no file ${rel}.`);
    void reply
      .header('Content-Type', file.type)
      .header('Cache-Control', file.immutable ? 'public, max-age=31536000, immutable' : 'no-cache')
      .header('X-Content-Type-Options', 'nosniff')
      .header('Referrer-Policy', 'same-origin');
    if (file.type.startsWith('text/html'))
      void reply.header('Content-Security-Policy', CSP).header('X-Frame-Options', 'DENY');
    return reply.send(file.body);
  }

  #load(): Map<string, StaticFile> {
    if (this.#files) return this.#files;
    if (!fs.existsSync(path.join(this.dir, 'index.html'))) {
      throw new FerryError(
        'SVC_UNAVAILABLE',
        `The console is not built (${this.dir} has no index.html): run \`npm run build\` (npm install does it) and start the Service again.`,
      );
    }
    const files = new Map<string, StaticFile>();
    for (const entry of fs.readdirSync(this.dir, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile()) continue;
      const full = path.join(entry.parentPath, entry.name);
      const rel = path.relative(this.dir, full).split(path.sep).join('/');
      const type = TYPES[path.extname(rel)];
      if (!type) continue;
      files.set(rel, { body: fs.readFileSync(full), type, immutable: rel.startsWith('assets/') });
    }
    this.#files = files;
    return files;
  }
}
