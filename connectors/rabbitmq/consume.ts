import type { Channel, ChannelModel, ConsumeMessage } from 'amqplib';
import {
  ConnectorError,
  type ConsumeOptions,
  type Consumption,
  type RabbitMqSource,
} from '../../src/connectors/sdk.js';
import { amqpError } from './errors.js';

/**
 * One queue consumed on a channel of its own, with manual acknowledgements and `prefetch` as
 * the channel's limit of unacknowledged deliveries (basic.qos): the broker sends no more until the
 * caller settles some. The queue must exist: Ferry never declares or changes a queue (its
 * arguments, its dead-letter exchange belong to whoever runs the broker). A delivery not settled
 * when the channel closes (close, a lost connection, a killed process) goes back to the queue.
 */
export async function consumeQueue(
  conn: ChannelModel,
  source: RabbitMqSource,
  options: ConsumeOptions,
  where: string,
): Promise<Consumption> {
  const channel = await conn.createChannel().catch((err: unknown) => {
    throw amqpError(err, `No channel could be opened on ${where}`);
  });
  let closing = false;
  let cause: unknown;
  // A channel the broker closes emits 'error' (with the reply code) and then 'close'.
  channel.on('error', (err: unknown) => (cause ??= err));
  channel.on('close', () => {
    if (closing) return;
    options.lost(
      cause === undefined
        ? new ConnectorError('Unreachable', `The channel to ${where} closed (the connection was lost).`)
        : amqpError(cause, `The broker closed the channel consuming queue ${source.queue} on ${where}`),
    );
  });
  try {
    await channel.checkQueue(source.queue);
  } catch (err) {
    closing = true;
    throw amqpError(
      err,
      `The queue ${source.queue} cannot be consumed on ${where} (it must exist: Ferry does not create queues)`,
    );
  }
  try {
    await channel.prefetch(options.prefetch, false);
    const acks = new Acks(channel);
    await channel.consume(source.queue, (msg) => onMessage(acks, msg, options, source, where), { noAck: false });
  } catch (err) {
    closing = true;
    await channel.close().catch(() => undefined);
    throw amqpError(err, `The queue ${source.queue} on ${where} could not be consumed`);
  }
  return {
    close: async () => {
      if (closing) return;
      closing = true;
      await channel.close().catch(() => undefined);
    },
  };
}

/**
 * Acknowledgements of one channel, sent as few as the order allows: delivery tags are consecutive
 * on a channel, and settled deliveries mostly come in order (a run acknowledges its batches in
 * order), so one `basic.ack` with `multiple` acknowledges every delivery up to the highest tag below
 * which all are settled, instead of one frame per message. A delivery settled out of order waits for
 * the ones before it (each of which is settled or handed back to the broker in the end); a reject
 * is sent at once, on its own (the broker forgets it, and a later `multiple` ack skips it).
 */
class Acks {
  /** The lowest delivery tag not yet covered by an acknowledgement sent. */
  #floor = 1;
  /** Settled and not yet covered: true for an acknowledgement, false for a reject already sent. */
  readonly #settled = new Map<number, boolean>();

  constructor(private readonly channel: Channel) {}

  ack(msg: ConsumeMessage): void {
    this.#settle(msg.fields.deliveryTag, true);
  }

  reject(msg: ConsumeMessage): void {
    quietly(() => this.channel.nack(msg, false, false));
    this.#settle(msg.fields.deliveryTag, false);
  }

  #settle(tag: number, ack: boolean): void {
    if (tag < this.#floor) return;
    this.#settled.set(tag, ack);
    // The highest acknowledged tag below which every delivery is settled: a `multiple` ack names
    // a tag the broker still holds (a rejected one it has forgotten would be an unknown tag).
    let upTo = 0;
    for (let acked = this.#settled.get(this.#floor); acked !== undefined; acked = this.#settled.get(this.#floor)) {
      this.#settled.delete(this.#floor);
      if (acked) upTo = this.#floor;
      this.#floor += 1;
    }
    // amqplib reads only the tag of the message it is given.
    if (upTo > 0) quietly(() => this.channel.ack({ fields: { deliveryTag: upTo } } as ConsumeMessage, true));
  }
}

function onMessage(
  acks: Acks,
  msg: ConsumeMessage | null,
  options: ConsumeOptions,
  source: RabbitMqSource,
  where: string,
): void {
  if (msg === null) {
    // The broker cancelled the consumer: the queue was deleted.
    options.lost(new ConnectorError('EntityNotFound', `The queue ${source.queue} on ${where} was deleted.`));
    return;
  }
  const contentType: unknown = msg.properties.contentType;
  options.deliver({
    body: msg.content,
    contentType: typeof contentType === 'string' ? contentType : undefined,
    redelivered: msg.fields.redelivered,
    ack: () => acks.ack(msg),
    reject: () => acks.reject(msg),
  });
}

/** On a channel that closed meanwhile an ack throws: the broker has put the delivery back already. */
function quietly(fn: () => void): void {
  try {
    fn();
  } catch {
    // Delivered again by the broker.
  }
}
