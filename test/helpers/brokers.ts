import { randomBytes } from 'node:crypto';
import amqp from 'amqplib';
import { connect, headers, RetentionPolicy, StorageType, type NatsConnection } from 'nats';

/**
 * RabbitMQ and NATS JetStream for tests: FERRY_TEST_RABBITMQ_URL (amqp://guest:guest@127.0.0.1:5672)
 * and FERRY_TEST_NATS_URL (nats://127.0.0.1:4222, with JetStream) name servers where tests may
 * create and delete queues and streams. In CI (CI=true) a missing URL fails the run; elsewhere the
 * tests that need it say why they are skipped.
 */
export const RABBITMQ_URL = process.env['FERRY_TEST_RABBITMQ_URL'];
export const NATS_URL = process.env['FERRY_TEST_NATS_URL'];

export const RABBITMQ_SKIP = RABBITMQ_URL
  ? undefined
  : 'FERRY_TEST_RABBITMQ_URL is not set: the RabbitMQ tests need a broker (amqp://guest:guest@127.0.0.1:5672) and are skipped.';
export const NATS_SKIP = NATS_URL
  ? undefined
  : 'FERRY_TEST_NATS_URL is not set: the NATS tests need a server with JetStream (nats://127.0.0.1:4222) and are skipped.';
export const BROKERS_SKIP = RABBITMQ_SKIP ?? NATS_SKIP;

for (const skip of [RABBITMQ_SKIP, NATS_SKIP]) {
  if (!skip) continue;
  if (process.env['CI'] === 'true') throw new Error(`${skip.split(':')[0]}: in CI the broker tests must run.`);
  process.stderr.write(`${skip}\n`);
}

/** The RabbitMQ Connector's properties for the test broker (the password in its own property). */
export function rabbitProperties(): Record<string, string> {
  const u = new URL(RABBITMQ_URL as string);
  const vhost = u.pathname.replace(/^\//, '');
  return {
    host: u.hostname,
    port: u.port || '5672',
    ...(u.username ? { user: decodeURIComponent(u.username) } : {}),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
    ...(vhost ? { vhost: decodeURIComponent(vhost) } : {}),
  };
}

/** The NATS JetStream Connector's properties for the test server. */
export function natsProperties(): Record<string, string> {
  return { servers: NATS_URL as string };
}

/** A queue or a stream of the tests, with what they do to it. */
export interface TestBrokerSource {
  /** The queue's or the stream's name (a fresh one). */
  readonly name: string;
  /** NATS: the subject its messages are published on. */
  readonly subject: string;
  /** Publishes each body (an object is sent as JSON), in order, and waits until the broker has them. */
  publish(bodies: ReadonlyArray<unknown>, contentType?: string): Promise<void>;
  /** Messages the broker holds that no consumer acknowledged (RabbitMQ: ready ones; NATS: not yet acknowledged by `consumer`). */
  waiting(consumer?: string): Promise<number>;
  delete(): Promise<void>;
}

const fresh = (prefix: string): string => `${prefix}_${randomBytes(5).toString('hex')}`;
const bytes = (b: unknown): Buffer =>
  Buffer.isBuffer(b) ? b : Buffer.from(typeof b === 'string' ? b : JSON.stringify(b));

/** A fresh durable queue on the test broker. */
export async function rabbitQueue(): Promise<TestBrokerSource> {
  const conn = await amqp.connect(RABBITMQ_URL as string);
  const channel = await conn.createConfirmChannel();
  const name = fresh('ferry_q');
  await channel.assertQueue(name, { durable: true });
  return {
    name,
    subject: name,
    async publish(bodies, contentType = 'application/json') {
      for (const b of bodies) {
        if (!channel.sendToQueue(name, bytes(b), { contentType, persistent: true }))
          await new Promise((r) => channel.once('drain', r));
      }
      await channel.waitForConfirms();
    },
    async waiting() {
      return (await channel.checkQueue(name)).messageCount;
    },
    async delete() {
      await channel.deleteQueue(name).catch(() => undefined);
      await conn.close().catch(() => undefined);
    },
  };
}

/** A fresh stream on the test server, of the subject `<name>.in`. */
export async function natsStream(): Promise<TestBrokerSource> {
  const nc: NatsConnection = await connect({ servers: NATS_URL as string });
  const jsm = await nc.jetstreamManager();
  const name = fresh('FERRY_S');
  const subject = `${name}.in`;
  await jsm.streams.add({ name, subjects: [subject], retention: RetentionPolicy.Limits, storage: StorageType.File });
  const js = nc.jetstream();
  return {
    name,
    subject,
    async publish(bodies, contentType) {
      const pending: Array<Promise<unknown>> = [];
      for (const b of bodies) {
        const h = contentType ? headers() : undefined;
        h?.set('Content-Type', contentType as string);
        pending.push(js.publish(subject, bytes(b), h ? { headers: h } : {}));
        if (pending.length >= 500) await Promise.all(pending.splice(0));
      }
      await Promise.all(pending);
    },
    async waiting(consumer) {
      if (!consumer) return (await jsm.streams.info(name)).state.messages;
      const info = await jsm.consumers.info(name, consumer);
      return info.num_pending + info.num_ack_pending;
    },
    async delete() {
      await jsm.streams.delete(name).catch(() => undefined);
      await nc.close().catch(() => undefined);
    },
  };
}
