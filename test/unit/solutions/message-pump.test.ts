import { describe, expect, it } from 'vitest';
import type { TakeMessagesRequest } from '../../../src/protocol/events.js';
import type { Block } from '../../../src/protocol/map.js';
import { MessagePump, type InvalidMessage, type PumpMessage } from '../../../src/solutions/message-pump.js';

const starter: Block = {
  blockId: '5e1f0000-0000-4000-8000-000000000001',
  name: 'Msg',
  blockType: 'WaitForMessage',
  action: 'None',
  fields: ['id'],
};
const bad = (id: number): PumpMessage => ({
  id,
  body: {},
  invalid: { code: 'EVT_MESSAGE_INVALID', message: 'The body is not valid JSON.', body: `junk ${id}` },
});

/** A taker that answers `batches` in turn (then nothing) and keeps every request. */
function taker(batches: PumpMessage[][]) {
  const asked: TakeMessagesRequest[] = [];
  return {
    asked,
    take: (req: TakeMessagesRequest): Promise<PumpMessage[]> => {
      asked.push(req);
      return Promise.resolve(batches.shift() ?? []);
    },
  };
}

describe('the message pump and messages that cannot be read', () => {
  it('gives the Map the readable ones, records the others, and acknowledges all once the batch is written', async () => {
    const t = taker([[{ id: 1, body: { id: 1 } }, bad(2), { id: 3, body: { id: 3 } }]]);
    const invalid: InvalidMessage[] = [];
    let flushed = 0;
    const pump = new MessagePump({
      take: t.take,
      solutionId: 's',
      mapId: 1,
      runId: 'r',
      starter,
      signal: new AbortController().signal,
      onInvalid: (m) => invalid.push(m),
      beforeAck: () => (flushed += 1),
    });
    const batches = [];
    for await (const b of pump.batches()) {
      batches.push(b);
      pump.progress(2);
    }
    await pump.flush();
    expect(batches).toEqual([[{ id: 1 }, { id: 3 }]]);
    expect(invalid.map((m) => m.body)).toEqual(['junk 2']);
    expect(pump.invalid).toBe(1);
    expect(flushed).toBe(1);
    // The errors were out before the batch's three messages were acknowledged, with the next take.
    expect(t.asked.flatMap((r) => r.done ?? [])).toEqual([1, 2, 3]);
  });

  it('acknowledges a batch of nothing but unreadable messages without the Map', async () => {
    const t = taker([[bad(7), bad(8)], [{ id: 9, body: { id: 9 } }]]);
    const pump = new MessagePump({
      take: t.take,
      solutionId: 's',
      mapId: 1,
      runId: 'r',
      starter,
      signal: new AbortController().signal,
    });
    const records = [];
    for await (const b of pump.batches()) {
      records.push(...b);
      pump.progress(records.length);
    }
    await pump.flush();
    expect(records).toEqual([{ id: 9 }]);
    expect(pump.invalid).toBe(2);
    expect(t.asked.flatMap((r) => r.done ?? []).sort()).toEqual([7, 8, 9]);
  });
});
