/**
 * The SDK's `consume` verb (optional): a message broker's queue or stream read as deliveries that
 * the caller settles one by one, long after the call that started them returned.
 *
 *   host ── session.consume(source, {prefetch, deliver, lost}) ──▶ plugin: channel / pull consumer
 *        ◀── deliver(delivery) × n (at most `prefetch` unsettled at a time: the broker holds the rest)
 *   caller ── delivery.ack() / reject() ──▶ broker (done / refused for good)
 *   caller ── consumption.close() ──▶ unsettled deliveries go back to the broker, delivered again
 *
 * At-least-once: a delivery is settled only when the caller says so, and one whose consumption
 * ended unsettled (closed, lost, the process killed) comes again, marked `redelivered`.
 */

export type { MessageSource, NatsSource, RabbitMqSource } from '../protocol/map.js';

/** One message a broker handed over. Settle it once: ack or reject. */
export interface Delivery {
  readonly body: Buffer;
  /** The content type the publisher gave (AMQP `content-type`, a NATS `Content-Type` header), if any. */
  readonly contentType: string | undefined;
  /** The broker delivered it before (to this consumer or another): it may have been handled already. */
  readonly redelivered: boolean;
  /** Done: the broker forgets it. */
  ack(): void;
  /** Refused for good: never delivered again (RabbitMQ: dead-lettered when the queue has a dead-letter exchange; JetStream: terminated). */
  reject(): void;
}

export interface ConsumeOptions {
  /** Most deliveries handed over and not yet settled; the broker holds the others back. */
  readonly prefetch: number;
  /** Each delivery, in the broker's order; called synchronously, it must return at once. */
  readonly deliver: (delivery: Delivery) => void;
  /** The consumption ended by itself (connection or channel lost, queue or stream deleted); not called after close(). */
  readonly lost: (err: Error) => void;
}

/** A consumption in progress. */
export interface Consumption {
  /** Stops it: deliveries not settled go back to the broker. */
  close(): Promise<void>;
}
