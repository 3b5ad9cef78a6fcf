import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ConnectorHost } from '../../../src/connectors/host.js';
import { isFerryError } from '../../../src/errors/ferry-error.js';
import type { MessageSource } from '../../../src/protocol/map.js';
import { BrokerConsumer } from '../../../src/solutions/brokers/broker-consumer.js';
import { BrokerMessages } from '../../../src/solutions/brokers/broker-messages.js';
import type { PumpMessage } from '../../../src/solutions/message-pump.js';
import { CONNECTORS_DIR } from '../../connectors/conformance.js';
import {
  natsProperties,
  natsStream,
  NATS_SKIP,
  rabbitProperties,
  rabbitQueue,
  RABBITMQ_SKIP,
  type TestBrokerSource,
} from '../../helpers/brokers.js';

/**
 * A broker-fed Message Map's messages (src/solutions/brokers) against the real brokers, through
 * the real plugin host and Connectors: what a run takes is acknowledged only once a later take
 * says it is done, what is not comes again after a close, the broker holds back what is past the
 * prefetch, and a body the Map cannot read is an invalid message, settled for good once done.
 */

interface Broker {
  readonly name: string;
  readonly skip: string | undefined;
  readonly connectorId: string;
  properties(): Record<string, string>;
  make(): Promise<TestBrokerSource>;
  source(s: TestBrokerSource, prefetch: number): MessageSource & { prefetch: number };
}

const BROKERS: Broker[] = [
  {
    name: 'RabbitMQ',
    skip: RABBITMQ_SKIP,
    connectorId: 'RabbitMQ',
    properties: rabbitProperties,
    make: rabbitQueue,
    source: (s, prefetch) => ({ type: 'rabbitmq', connectionId: 'c-rabbit', queue: s.name, prefetch }),
  },
  {
    name: 'NATS JetStream',
    skip: NATS_SKIP,
    connectorId: 'NATS JetStream',
    properties: natsProperties,
    make: natsStream,
    source: (s, prefetch) => ({
      type: 'nats',
      connectionId: 'c-nats',
      stream: s.name,
      consumer: 'ferry-test',
      prefetch,
      ackWaitSeconds: 2,
    }),
  },
];

const log = pino({ level: 'silent' });
let host: ConnectorHost;

beforeAll(async () => {
  host = new ConnectorHost({ dir: CONNECTORS_DIR, log });
  await host.loadAll();
});

afterAll(async () => {
  await host.close();
});

/** Polls `probe` until it answers something other than undefined, for at most `ms`. */
async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe.each(BROKERS)('messages from $name', (broker) => {
  const started: BrokerConsumer[] = [];
  let src: TestBrokerSource | undefined;

  const consume = async (s: TestBrokerSource, prefetch = 100) => {
    let notified = 0;
    const messages = new BrokerMessages({ describe: `${broker.name} ${s.name}`, notify: () => (notified += 1) });
    const consumer = new BrokerConsumer({
      host: () => Promise.resolve(host),
      connection: { connectorId: broker.connectorId, connectionId: `c-${s.name}`, properties: broker.properties() },
      source: broker.source(s, prefetch),
      messages,
      log,
      backoffMs: { base: 100, max: 500 },
    });
    consumer.start();
    started.push(consumer);
    await until('the consumption', () => (messages.up ? true : undefined));
    return { messages, consumer, notified: () => notified };
  };
  const take = (messages: BrokerMessages, runId: string, max: number, done: number[] = []): Promise<PumpMessage[]> =>
    messages.take({ solutionId: 's', mapId: 1, runId, max, done }, new AbortController().signal);
  const pendingAtLeast = (messages: BrokerMessages, n: number) =>
    until(`${n} messages delivered`, () => (messages.counts.pending >= n ? true : undefined));

  afterEach(async () => {
    await Promise.all(started.splice(0).map((c) => c.stop()));
    await src?.delete();
    src = undefined;
  });

  it.skipIf(Boolean(broker.skip))(
    'acknowledges only what a later take says is done; the rest comes again after a close',
    async () => {
      src = await broker.make();
      await src.publish(Array.from({ length: 10 }, (_, i) => ({ i })));
      const first = await consume(src);
      await pendingAtLeast(first.messages, 10);
      expect(first.notified()).toBe(1);
      const got = await take(first.messages, 'run-a', 10);
      expect(got.map((m) => m.body['i'])).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      // The first four written: their IDs ride on the next take.
      expect(
        await take(
          first.messages,
          'run-a',
          0,
          got.slice(0, 4).map((m) => m.id),
        ),
      ).toEqual([]);
      await first.consumer.stop();
      const second = await consume(src);
      await pendingAtLeast(second.messages, 6);
      const again = await take(second.messages, 'run-b', 20);
      expect(again.map((m) => m.body['i']).sort()).toEqual([4, 5, 6, 7, 8, 9]);
      await take(
        second.messages,
        'run-b',
        0,
        again.map((m) => m.id),
      );
      await second.consumer.stop();
      await until('nothing left on the broker', async () =>
        (await src?.waiting('ferry-test')) === 0 ? true : undefined,
      );
    },
  );

  it.skipIf(Boolean(broker.skip))(
    'holds no more than the prefetch; the broker sends more as they are done',
    async () => {
      src = await broker.make();
      await src.publish(Array.from({ length: 30 }, (_, i) => ({ i })));
      const { messages } = await consume(src, 5);
      await pendingAtLeast(messages, 5);
      await new Promise((r) => setTimeout(r, 300));
      expect(messages.counts).toEqual({ pending: 5, leased: 0 });
      const seen: number[] = [];
      let done: number[] = [];
      while (seen.length < 30) {
        const got = await take(messages, 'run', 200, done);
        expect(got.length).toBeLessThanOrEqual(5);
        expect(messages.counts.pending + messages.counts.leased).toBeLessThanOrEqual(5);
        seen.push(...got.map((m) => m.body['i'] as number));
        done = got.map((m) => m.id);
      }
      await take(messages, 'run', 0, done);
      expect([...new Set(seen)].sort((a, b) => a - b)).toEqual(Array.from({ length: 30 }, (_, i) => i));
    },
  );

  it.skipIf(Boolean(broker.skip))('a new run takes what the run before it held first, in order', async () => {
    src = await broker.make();
    await src.publish(Array.from({ length: 6 }, (_, i) => ({ i })));
    const { messages } = await consume(src);
    await pendingAtLeast(messages, 6);
    const a = await take(messages, 'run-a', 3);
    expect(a.map((m) => m.body['i'])).toEqual([0, 1, 2]);
    // run-a ended without writing them (a fatal error): run-b gets them back before the others.
    const b = await take(messages, 'run-b', 10);
    expect(b.map((m) => m.body['i'])).toEqual([0, 1, 2, 3, 4, 5]);
    expect(b.slice(0, 3).map((m) => m.id)).toEqual(a.map((m) => m.id));
  });

  it.skipIf(Boolean(broker.skip))(
    'an array is several messages; a body that cannot be read is an invalid message, settled once done',
    async () => {
      src = await broker.make();
      await src.publish([[{ i: 1 }, { i: 2 }], 'not json at all', '<Order id="3"><Sku>A</Sku></Order>'], 'text/plain');
      const first = await consume(src);
      await pendingAtLeast(first.messages, 4);
      const got = await take(first.messages, 'run', 10);
      expect(got.map((m) => (m.invalid ? m.invalid.code : m.body))).toEqual([
        { i: 1 },
        { i: 2 },
        'EVT_MESSAGE_INVALID',
        { id: '3', Sku: 'A' },
      ]);
      expect(got[2]?.invalid?.body).toBe('not json at all');
      await take(
        first.messages,
        'run',
        0,
        got.map((m) => m.id),
      );
      await first.consumer.stop();
      await until('nothing left on the broker', async () =>
        (await src?.waiting('ferry-test')) === 0 ? true : undefined,
      );
    },
  );

  it.skipIf(Boolean(broker.skip))('the run holding messages fails when the source goes away', async () => {
    src = await broker.make();
    await src.publish([{ i: 1 }]);
    const { messages } = await consume(src);
    await pendingAtLeast(messages, 1);
    expect(await take(messages, 'run', 10)).toHaveLength(1);
    await src.delete();
    await until('the consumption lost', () => (messages.up ? undefined : true));
    const err = await take(messages, 'run', 10).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isFerryError(err) && err.code).toBe('RUN_BROKER_UNAVAILABLE');
    // A run that begins now finds nothing, and fails nothing.
    expect(await take(messages, 'run-2', 10)).toEqual([]);
  });
});
