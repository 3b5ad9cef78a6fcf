import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MapModel, MESSAGE_SOURCE_CONNECTORS, MessageSource } from '../../../src/protocol/map.js';

const CONN = '5e1f0000-0000-4000-8000-00000000c0de';
const block = (name: string, blockType: string, extra: Record<string, unknown> = {}) => ({
  blockId: `5e1f0000-0000-4000-8000-${String(name.length).padStart(12, '0')}`,
  name,
  blockType,
  action: 'None',
  ...extra,
});

describe("a Wait For Message Block's messageSource", () => {
  it('is a RabbitMQ queue or a JetStream stream', () => {
    expect(MessageSource.parse({ type: 'rabbitmq', connectionId: CONN, queue: 'orders' })).toEqual({
      type: 'rabbitmq',
      connectionId: CONN,
      queue: 'orders',
    });
    const nats = { type: 'nats', connectionId: CONN, stream: 'ORDERS', consumer: 'ferry', subject: 'orders.*.>' };
    expect(MessageSource.parse({ ...nats, prefetch: 10_000, ackWaitSeconds: 5 })).toMatchObject(nats);
  });

  it.each([
    ['an unknown broker', { type: 'kafka', connectionId: CONN, topic: 't' }],
    ['no queue', { type: 'rabbitmq', connectionId: CONN, queue: '' }],
    ['a prefetch of 0', { type: 'rabbitmq', connectionId: CONN, queue: 'q', prefetch: 0 }],
    ['a prefetch over 10,000', { type: 'rabbitmq', connectionId: CONN, queue: 'q', prefetch: 10_001 }],
    ['a field of the other broker', { type: 'rabbitmq', connectionId: CONN, queue: 'q', stream: 'S' }],
    ['a stream name with a dot', { type: 'nats', connectionId: CONN, stream: 'A.B' }],
    ['a consumer name with a space', { type: 'nats', connectionId: CONN, stream: 'A', consumer: 'a b' }],
    ['an empty subject token', { type: 'nats', connectionId: CONN, stream: 'A', subject: 'a..b' }],
    ['a ">" before the last token', { type: 'nats', connectionId: CONN, stream: 'A', subject: 'a.>.b' }],
    ['no Connection', { type: 'nats', stream: 'A' }],
  ])('refuses %s', (_what, source) => {
    expect(MessageSource.safeParse(source).success).toBe(false);
  });

  it('belongs to the first Block of a Map, a Wait For Message', () => {
    const source = { type: 'rabbitmq', connectionId: CONN, queue: 'orders' };
    const model = (blocks: unknown[]) => MapModel.safeParse({ version: '3.0', name: 'M', blocks });
    expect(model([block('Msg', 'WaitForMessage', { fields: ['id'], messageSource: source })]).success).toBe(true);
    const onQuery = model([block('Q', 'Query', { messageSource: source })]);
    expect(onQuery.success).toBe(false);
    expect(JSON.stringify(onQuery.error?.issues)).toMatch(/only a Map's first Block, a WaitForMessage/);
  });

  it('names the built-in Connectors by the IDs of their manifests', () => {
    for (const [folder, want] of [
      ['rabbitmq', MESSAGE_SOURCE_CONNECTORS.rabbitmq],
      ['nats', MESSAGE_SOURCE_CONNECTORS.nats],
    ] as const) {
      const manifest = JSON.parse(
        fs.readFileSync(new URL(`../../../connectors/${folder}/manifest.json`, import.meta.url), 'utf8'),
      ) as { id: string; name: string };
      expect({ id: manifest.id, name: manifest.name }).toEqual(want);
    }
  });
});
