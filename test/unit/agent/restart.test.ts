import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { RESTART_EXIT_CODE, RestartController } from '../../../src/agent/restart.js';
import { StatusMachine } from '../../../src/agent/status.js';
import { WorkRegistry } from '../../../src/agent/work.js';

function setup() {
  const status = new StatusMachine();
  const work = new WorkRegistry();
  const events: string[] = [];
  status.onChange((c) => events.push(c.to));
  const restart = new RestartController({
    status,
    work,
    log: pino({ level: 'silent' }),
    flush: async () => void events.push('flush'),
    exit: (code) => void events.push(`exit ${code}`),
  });
  return { status, work, events, restart };
}

const until = async (cond: () => boolean) => {
  const deadline = Date.now() + 2000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('condition not met');
    await new Promise((r) => setTimeout(r, 5));
  }
};

describe('restart', () => {
  it('restartNow=false waits for running work, refusing new work meanwhile, then restarts', async () => {
    const { work, events, restart } = setup();
    let finish!: () => void;
    const running = work.run('solution', () => new Promise<void>((r) => (finish = r)));
    const done = restart.request('user', false);
    expect(events).toEqual(['WaitingToRestartAgentUserRequest']);
    await expect(work.run('new', async () => 1)).rejects.toMatchObject({ code: 'AGT_DRAINING' });
    await new Promise((r) => setTimeout(r, 20));
    expect(events).toEqual(['WaitingToRestartAgentUserRequest']);
    finish();
    await running;
    await done;
    expect(events).toEqual(['WaitingToRestartAgentUserRequest', 'Restarting', 'flush', `exit ${RESTART_EXIT_CODE}`]);
  });

  it('restartNow=true interrupts running work, then restarts', async () => {
    const { work, events, restart } = setup();
    const running = work.run(
      'solution',
      (w) => new Promise((_r, reject) => w.signal.addEventListener('abort', () => reject(w.signal.reason as Error))),
    );
    await restart.request('user', true);
    await expect(running).rejects.toMatchObject({ code: 'AGT_INTERRUPTED' });
    expect(events).toEqual(['WaitingToRestartAgentUserRequest', 'Restarting', 'flush', `exit ${RESTART_EXIT_CODE}`]);
  });

  it('a restartNow=true request escalates a waiting restart; the restart happens once', async () => {
    const { work, events, restart } = setup();
    const running = work.run(
      'solution',
      (w) => new Promise((_r, reject) => w.signal.addEventListener('abort', () => reject(w.signal.reason as Error))),
    );
    const first = restart.request('memory', false);
    expect(events).toEqual(['WaitingToRestartAgentMemoryLimit']);
    const second = restart.request('user', true);
    await expect(running).rejects.toMatchObject({ code: 'AGT_INTERRUPTED' });
    await Promise.all([first, second]);
    await until(() => events.includes(`exit ${RESTART_EXIT_CODE}`));
    expect(events.filter((e) => e.startsWith('exit'))).toHaveLength(1);
    expect(events[0]).toBe('WaitingToRestartAgentMemoryLimit');
  });
});
