import amqp, { type ChannelModel } from 'amqplib';
import {
  BrokerSession,
  type CallContext,
  type ConnectionProperties,
  type ConnectorPlugin,
  type ConsumeOptions,
  type Consumption,
  type RabbitMqSource,
} from '../../src/connectors/sdk.js';
import { consumeQueue } from './consume.js';
import { amqpError } from './errors.js';
import { describe, parseProps, type RabbitMqProps } from './properties.js';

/**
 * The RabbitMQ Connector (docs/connectors.md "rabbitmq"): a broker an Event Solution's Message Map
 * takes its messages from (docs/events.md "Messages from RabbitMQ or NATS JetStream"). A session
 * is one AMQP connection; `test` opens a channel on it, `consume` reads a queue on a channel of
 * its own (consume.ts). It has no entities: it is no datastore to query or write.
 */
class RabbitMqSession extends BrokerSession<'rabbitmq'> {
  readonly #where: string;

  constructor(
    props: RabbitMqProps,
    private readonly conn: ChannelModel,
  ) {
    super('rabbitmq', 'RabbitMQ');
    this.#where = describe(props);
  }

  async test(_ctx: CallContext): Promise<void> {
    const channel = await this.conn.createChannel().catch((err: unknown) => {
      throw amqpError(err, `No channel could be opened on ${this.#where}`);
    });
    await channel.close();
  }

  protected consumeOwn(source: RabbitMqSource, options: ConsumeOptions): Promise<Consumption> {
    return consumeQueue(this.conn, source, options, this.#where);
  }

  async disconnect(_ctx: CallContext): Promise<void> {
    await this.conn.close().catch(() => undefined);
  }
}

async function open(props: RabbitMqProps): Promise<ChannelModel> {
  const where = describe(props);
  let conn: ChannelModel;
  try {
    conn = await amqp.connect(
      {
        protocol: props.protocol,
        hostname: props.host,
        port: props.port,
        vhost: props.vhost,
        heartbeat: props.heartbeatSeconds,
        ...(props.user !== undefined ? { username: props.user } : {}),
        ...(props.password !== undefined ? { password: props.password } : {}),
      },
      { timeout: props.connectTimeoutMs, servername: props.host },
    );
  } catch (err) {
    throw amqpError(err, `RabbitMQ at ${where} refused the connection or could not be reached`, 'connect');
  }
  // Without a listener an 'error' event would end the process; its 'close' reaches every channel.
  conn.on('error', () => undefined);
  return conn;
}

const plugin: ConnectorPlugin = {
  async preconnect(properties: ConnectionProperties) {
    const conn = await open(parseProps(properties));
    await conn.close().catch(() => undefined);
    return { reply: 'SUCCESS' };
  },
  async connect(properties: ConnectionProperties) {
    const props = parseProps(properties);
    return new RabbitMqSession(props, await open(props));
  },
};

export default plugin;
