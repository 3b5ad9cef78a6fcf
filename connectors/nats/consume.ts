import {
  AckPolicy,
  DeliverPolicy,
  nanos,
  type ConsumerConfig,
  type ConsumerInfo,
  type JetStreamManager,
  type JsMsg,
  type NatsConnection,
} from 'nats';
import { ConnectorError, type ConsumeOptions, type Consumption, type NatsSource } from '../../src/connectors/sdk.js';
import { JS_CONSUMER_NOT_FOUND, natsError } from './errors.js';

/** How long a delivery may stay unacknowledged by a dead consumer unless the source says otherwise. */
const DEFAULT_ACK_WAIT_S = 30;

/**
 * A stream read through a durable pull consumer: Ferry creates it (or brings its limits up to
 * date) with explicit acknowledgements and `max_ack_pending` = prefetch, so JetStream hands over
 * no more than that many unacknowledged messages. A new consumer starts at the stream's first
 * message (deliver policy `all`). While a delivery waits for the caller (a write in progress, a
 * run waiting out a failure), it is marked in progress every third of `ack_wait`, so JetStream does
 * not deliver it a second time; one whose consumer died is delivered again after `ack_wait`.
 */
export async function consumeStream(
  nc: NatsConnection,
  source: NatsSource,
  options: ConsumeOptions,
  where: string,
): Promise<Consumption> {
  const durable = source.consumer;
  if (durable === undefined) throw new ConnectorError('InvalidQuery', 'The JetStream consumer has no name.');
  const ackWaitS = source.ackWaitSeconds ?? DEFAULT_ACK_WAIT_S;
  const jsm = await nc.jetstreamManager({ checkAPI: false }).catch((err: unknown) => {
    throw natsError(err, `JetStream is not available on ${where}`);
  });
  try {
    await jsm.streams.info(source.stream);
  } catch (err) {
    throw natsError(
      err,
      `The stream ${source.stream} cannot be read on ${where} (it must exist: Ferry does not create streams)`,
    );
  }
  await ensureConsumer(jsm, source, durable, options.prefetch, ackWaitS, where);
  const consumer = await nc
    .jetstream()
    .consumers.get(source.stream, durable)
    .catch((err: unknown) => {
      throw natsError(err, `The consumer ${durable} of stream ${source.stream} cannot be read on ${where}`);
    });
  // By stream sequence: a message JetStream delivers again while it is held here (a nak that
  // crossed a pull, an ack_wait that passed) is the same message; the newest delivery settles it.
  const unsettled = new Map<number, JsMsg>();
  const settle = (seq: number, how: (m: JsMsg) => void): void => {
    const m = unsettled.get(seq);
    if (!m) return;
    unsettled.delete(seq);
    how(m);
  };
  let closing = false;
  const messages = await consumer.consume({
    max_messages: options.prefetch,
    // A stream or consumer deleted ends the consumption (the caller says so and starts again), rather than waiting silently.
    abort_on_missing_resource: true,
    callback: (m) => {
      if (closing) return m.nak();
      const seq = m.seq;
      const held = unsettled.has(seq);
      unsettled.set(seq, m);
      if (held) return;
      const type = m.headers?.get('Content-Type');
      options.deliver({
        body: Buffer.from(m.data.buffer, m.data.byteOffset, m.data.byteLength),
        contentType: type ? type : undefined,
        redelivered: m.redelivered,
        ack: () => settle(seq, (x) => x.ack()),
        reject: () => settle(seq, (x) => x.term()),
      });
    },
  });
  const keepAlive = setInterval(
    () => {
      for (const m of unsettled.values()) m.working();
    },
    Math.max(1000, (ackWaitS * 1000) / 3),
  );
  keepAlive.unref();
  const end = (err: Error): void => {
    clearInterval(keepAlive);
    if (closing) return;
    closing = true;
    options.lost(err);
  };
  void messages.closed().then(
    (err) => end(err ? natsError(err, `Consuming stream ${source.stream} on ${where} ended`) : lostConnection(where)),
    (err: unknown) => end(natsError(err, `Consuming stream ${source.stream} on ${where} ended`)),
  );
  void nc
    .closed()
    .then((err) => end(err ? natsError(err, `The connection to ${where} closed`) : lostConnection(where)));
  return {
    close: async () => {
      if (closing) return;
      closing = true;
      clearInterval(keepAlive);
      await messages.close();
      // Handed back at once, rather than after ack_wait: the next consumer gets them without a wait.
      for (const m of unsettled.values()) m.nak();
      unsettled.clear();
    },
  };
}

const lostConnection = (where: string): ConnectorError =>
  new ConnectorError('Unreachable', `The connection to ${where} closed.`);

/** Creates the durable pull consumer, or checks the one there and brings its limits up to date. */
async function ensureConsumer(
  jsm: JetStreamManager,
  source: NatsSource,
  durable: string,
  prefetch: number,
  ackWaitS: number,
  where: string,
): Promise<void> {
  let info: ConsumerInfo | undefined;
  try {
    info = await jsm.consumers.info(source.stream, durable);
  } catch (err) {
    if ((err as { api_error?: { err_code?: number } }).api_error?.err_code !== JS_CONSUMER_NOT_FOUND)
      throw natsError(err, `The consumer ${durable} of stream ${source.stream} cannot be read on ${where}`);
  }
  const ackWait = nanos(ackWaitS * 1000);
  if (!info) {
    const config: Partial<ConsumerConfig> = {
      durable_name: durable,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      max_ack_pending: prefetch,
      ack_wait: ackWait,
      ...(source.subject !== undefined ? { filter_subject: source.subject } : {}),
    };
    await jsm.consumers.add(source.stream, config).catch((err: unknown) => {
      throw natsError(err, `The consumer ${durable} could not be created on stream ${source.stream} of ${where}`);
    });
    return;
  }
  const c = info.config;
  const clash =
    c.deliver_subject !== undefined
      ? 'it is a push consumer'
      : c.ack_policy !== AckPolicy.Explicit
        ? `its acknowledgement policy is ${c.ack_policy}`
        : (c.filter_subject ?? '') !== (source.subject ?? '')
          ? `it reads subject "${c.filter_subject ?? '(all)'}", not "${source.subject ?? '(all)'}"`
          : undefined;
  if (clash)
    throw new ConnectorError(
      'InvalidQuery',
      `The consumer ${durable} of stream ${source.stream} on ${where} exists and ${clash}: name another consumer in the Map's messageSource, or delete that one.`,
    );
  if (c.max_ack_pending !== prefetch || c.ack_wait !== ackWait)
    await jsm.consumers
      .update(source.stream, durable, { max_ack_pending: prefetch, ack_wait: ackWait })
      .catch((err: unknown) => {
        throw natsError(err, `The consumer ${durable} of stream ${source.stream} on ${where} could not be updated`);
      });
}
