import { connect, type NatsConnection } from 'nats';
import {
  BrokerSession,
  type CallContext,
  type ConnectionProperties,
  type ConnectorPlugin,
  type ConsumeOptions,
  type Consumption,
  type NatsSource,
} from '../../src/connectors/sdk.js';
import { consumeStream } from './consume.js';
import { natsError } from './errors.js';
import { parseProps, type NatsProps } from './properties.js';

/**
 * The NATS JetStream Connector (docs/connectors.md "nats"): a server an Event Solution's Message
 * Map takes its messages from, a stream read by a durable pull consumer (consume.ts). A session
 * is one NATS connection; `test` asks JetStream for the account's information. It has no
 * entities: it is no datastore to query or write.
 */
class NatsSession extends BrokerSession<'nats'> {
  readonly #where: string;

  constructor(
    props: NatsProps,
    private readonly nc: NatsConnection,
  ) {
    super('nats', 'NATS JetStream');
    this.#where = `NATS ${props.servers.join(', ')}`;
  }

  async test(_ctx: CallContext): Promise<void> {
    try {
      const jsm = await this.nc.jetstreamManager();
      await jsm.getAccountInfo();
    } catch (err) {
      throw natsError(err, `JetStream is not available on ${this.#where}`);
    }
  }

  protected consumeOwn(source: NatsSource, options: ConsumeOptions): Promise<Consumption> {
    return consumeStream(this.nc, source, options, this.#where);
  }

  async disconnect(_ctx: CallContext): Promise<void> {
    await this.nc.close().catch(() => undefined);
  }
}

async function open(props: NatsProps): Promise<NatsConnection> {
  const waitMs = 2000;
  try {
    return await connect({
      servers: props.servers,
      name: 'ferry-agent',
      timeout: props.connectTimeoutMs,
      reconnectTimeWait: waitMs,
      maxReconnectAttempts: Math.ceil(props.reconnectMs / waitMs),
      ...(props.tls ? { tls: {} } : {}),
      ...(props.user !== undefined ? { user: props.user } : {}),
      ...(props.password !== undefined ? { pass: props.password } : {}),
      ...(props.token !== undefined ? { token: props.token } : {}),
    });
  } catch (err) {
    throw natsError(err, `NATS at ${props.servers.join(', ')} refused the connection or could not be reached`);
  }
}

const plugin: ConnectorPlugin = {
  async preconnect(properties: ConnectionProperties) {
    const nc = await open(parseProps(properties));
    await nc.close().catch(() => undefined);
    return { reply: 'SUCCESS' };
  },
  async connect(properties: ConnectionProperties) {
    const props = parseProps(properties);
    return new NatsSession(props, await open(props));
  },
};

export default plugin;
