import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { Components, type Component } from '../../../src/agent/components.js';

/** A logger that keeps the lines it writes. */
function warnings() {
  const lines: Array<Record<string, unknown>> = [];
  const log = pino(
    { level: 'warn' },
    { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
  );
  return { lines, log };
}

/** A component that writes its start and stop into `events`. */
function recorded(name: string, events: string[], stop?: () => void | Promise<void>): Component {
  return {
    name,
    start: () => void events.push(`start ${name}`),
    stop: () => {
      events.push(`stop ${name}`);
      return stop?.();
    },
  };
}

describe('components', () => {
  it('start in the order added and stop in the reverse order', async () => {
    const events: string[] = [];
    const { log } = warnings();
    const components = new Components(log).add(recorded('a', events), recorded('b', events));
    components.add(recorded('c', events));
    components.start();
    expect(events).toEqual(['start a', 'start b', 'start c']);
    expect(await components.stop()).toEqual([]);
    expect(events.slice(3)).toEqual(['stop c', 'stop b', 'stop a']);
  });

  it('wait for an asynchronous stop before the next one', async () => {
    const events: string[] = [];
    const { log } = warnings();
    let release: () => void = () => undefined;
    const slow = new Promise<void>((resolve) => (release = resolve));
    const components = new Components(log).add(
      recorded('first', events),
      recorded('slow', events, () => slow),
    );
    const stopped = components.stop();
    expect(events).toEqual(['stop slow']);
    await Promise.resolve();
    expect(events).toEqual(['stop slow']);
    release();
    await stopped;
    expect(events).toEqual(['stop slow', 'stop first']);
  });

  it('run synchronous stops in one turn', () => {
    const events: string[] = [];
    const { log } = warnings();
    const components = new Components(log).add(recorded('a', events), recorded('b', events), recorded('c', events));
    void components.stop();
    // Nothing was awaited: no other callback could run between these stops.
    expect(events).toEqual(['stop c', 'stop b', 'stop a']);
  });

  it('stop the others when one fails, and log and return the failure', async () => {
    const events: string[] = [];
    const { lines, log } = warnings();
    const thrown = new Error('close failed');
    const rejected = new Error('async close failed');
    const components = new Components(log).add(
      recorded('a', events),
      recorded('throws', events, () => {
        throw thrown;
      }),
      recorded('rejects', events, () => Promise.reject(rejected)),
      recorded('d', events),
    );
    const failures = await components.stop();
    expect(events).toEqual(['stop d', 'stop rejects', 'stop throws', 'stop a']);
    expect(failures).toEqual([
      { name: 'rejects', err: rejected },
      { name: 'throws', err: thrown },
    ]);
    expect(lines.map((l) => [l['msg'], l['componentName'], (l['err'] as { message: string }).message])).toEqual([
      ['component not stopped cleanly', 'rejects', 'async close failed'],
      ['component not stopped cleanly', 'throws', 'close failed'],
    ]);
  });

  it('stop once, however often asked', async () => {
    const events: string[] = [];
    const { log } = warnings();
    const components = new Components(log).add(recorded('a', events));
    const first = components.stop();
    const second = components.stop();
    expect(second).toBe(first);
    await second;
    expect(events).toEqual(['stop a']);
  });

  it('stop components without a start or a stop, and ones never started', async () => {
    const events: string[] = [];
    const { log } = warnings();
    const startOnly: Component = { name: 'start only', start: () => void events.push('start only') };
    const components = new Components(log).add({ name: 'bare' }, recorded('b', events), startOnly);
    expect(await components.stop()).toEqual([]);
    expect(events).toEqual(['stop b']);
  });

  it('throw a failing start, with the components before it started', () => {
    const events: string[] = [];
    const { log } = warnings();
    const components = new Components(log).add(
      recorded('a', events),
      {
        name: 'broken',
        start: () => {
          throw new Error('cannot start');
        },
      },
      recorded('c', events),
    );
    expect(() => components.start()).toThrow('cannot start');
    expect(events).toEqual(['start a']);
  });
});
