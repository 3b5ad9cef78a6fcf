import type { Logger } from 'pino';
import type { WriteObserver } from '../connectors/connection.js';
import { ConnectorHost } from '../connectors/host.js';
import type { Component } from './components.js';

/**
 * The plugin host of the Agent, made and loaded with the installed plugins at the first command
 * that needs one (most starts never do); its stop closes the host only when it was made.
 */
export class LazyConnectorHost implements Component {
  readonly name = 'connector host';
  #host: Promise<ConnectorHost> | undefined;

  constructor(
    private readonly opts: {
      readonly dir: string;
      readonly log: Logger;
      readonly agentVersion: string;
      /** The Agent's metrics, told of every plugin write call. */
      readonly metrics?: { readonly write: WriteObserver } | undefined;
    },
  ) {}

  /** The loaded host; every call gets the same one. */
  readonly get = (): Promise<ConnectorHost> => (this.#host ??= this.#load());

  stop(): Promise<void> | undefined {
    return this.#host?.then((host) => host.close());
  }

  async #load(): Promise<ConnectorHost> {
    const { dir, log, agentVersion, metrics } = this.opts;
    const host = new ConnectorHost({ dir, log, agentVersion, onWrite: metrics?.write });
    const { failed } = await host.loadAll();
    for (const f of failed) log.warn({ folder: f.folder, code: f.error.code }, 'connector plugin not loaded');
    return host;
  }
}
