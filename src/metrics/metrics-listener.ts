import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A `host:port` to listen at: `127.0.0.1:9464`, `[::1]:9464`, or `:9464` (every address). */
export function parseListenAddress(text: string): { host: string; port: number } | undefined {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(text.trim());
  if (!m) return undefined;
  const port = Number(m[3]);
  if (port > 65_535) return undefined;
  const host = m[1] ?? m[2] ?? '';
  return { host: host === '' ? '0.0.0.0' : host, port };
}

/** What a metrics listener serves: the exposition text and its content type. */
export interface MetricsSource {
  scrape(): Promise<string>;
  readonly contentType: string;
}

/**
 * A plain HTTP listener of its own that serves only `GET /metrics`, without a token: the bind
 * address is the protection (loopback, or a network only Prometheus reaches). Used by the Service
 * (FERRY_METRICS_LISTEN) and by the Agent (FERRY_AGENT_METRICS_PORT). Any other path is 404, any
 * other method 405.
 */
export class MetricsListener {
  readonly #server: http.Server;
  #url: string | undefined;
  #listening: Promise<unknown> | undefined;

  constructor(
    private readonly source: MetricsSource,
    private readonly onError: (err: unknown) => void,
  ) {
    this.#server = http.createServer((req, res) => this.#answer(req, res));
    // A scrape is short: a client that keeps a socket open does not hold the process up at close.
    this.#server.keepAliveTimeout = 5_000;
  }

  /** Listens; resolves to the URL of the metrics path (`http://127.0.0.1:9464/metrics`). */
  async listen(host: string, port: number): Promise<string> {
    this.#listening = new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(port, host, () => {
        this.#server.off('error', reject);
        resolve();
      });
    });
    await this.#listening;
    const addr = this.#server.address() as AddressInfo;
    const shown = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
    this.#url = `http://${shown.includes(':') ? `[${shown}]` : shown}:${addr.port}/metrics`;
    return this.#url;
  }

  /** The URL of the metrics path once it listens. */
  get url(): string | undefined {
    return this.#url;
  }

  async close(): Promise<void> {
    // A close right after the start waits for the listen, so that no socket stays open behind it.
    await this.#listening?.catch(() => undefined);
    if (!this.#server.listening) return;
    await new Promise<void>((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }

  #answer(req: http.IncomingMessage, res: http.ServerResponse): void {
    const path = (req.url ?? '/').split('?')[0]?.replace(/\/+$/, '');
    if (path !== '/metrics') return void res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found\n');
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return void res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('Method not allowed\n');
    this.source.scrape().then(
      (text) => {
        res.writeHead(200, { 'content-type': this.source.contentType, 'cache-control': 'no-store' });
        res.end(req.method === 'HEAD' ? undefined : text);
      },
      (err: unknown) => {
        this.onError(err);
        res.writeHead(500, { 'content-type': 'text/plain' }).end('Metrics could not be collected\n');
      },
    );
  }
}
