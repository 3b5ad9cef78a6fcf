import { describe, expect, it } from 'vitest';
import { CommandHandlers } from '../../../src/agent/command-handlers.js';
import { COMMANDS } from '../../../src/protocol/commands.js';

describe('command handlers', () => {
  it('runs the handler of the command kind with the command as sent, and answers what it resolves with', async () => {
    const seen: string[] = [];
    const handlers = new CommandHandlers()
      .on('stopSolution', async (c) => {
        seen.push(`stop ${c.solutionId}`);
        return { stopping: true, runId: 'r1' };
      })
      .on('restart', async (c) => {
        seen.push(`restart ${c.restartNow}`);
        return { accepted: true, restartNow: c.restartNow };
      });
    await expect(handlers.dispatch({ id: 'c1', type: 'stopSolution', solutionId: 's1' })).resolves.toEqual({
      stopping: true,
      runId: 'r1',
    });
    await expect(handlers.dispatch({ id: 'c2', type: 'restart', restartNow: true })).resolves.toEqual({
      accepted: true,
      restartNow: true,
    });
    expect(seen).toEqual(['stop s1', 'restart true']);
  });

  it('answers a kind without a handler as an Agent without the command does (CHN_INVALID_MESSAGE)', async () => {
    const handlers = new CommandHandlers().on('restart', async (c) => ({ accepted: true, restartNow: c.restartNow }));
    await expect(handlers.dispatch({ id: 'c1', type: 'knownRuns', runIds: ['r1'] })).rejects.toMatchObject({
      code: 'CHN_INVALID_MESSAGE',
      details: { command: 'knownRuns' },
    });
  });

  it('lets the handler error reach the channel, which sends it as the error reply', async () => {
    const handlers = new CommandHandlers().on('monitorSolution', () => Promise.reject(new Error('store closed')));
    await expect(handlers.dispatch({ id: 'c1', type: 'monitorSolution', solutionId: 's1' })).rejects.toThrow(
      'store closed',
    );
  });

  it('refuses a second handler for a kind: a command has one answer', () => {
    const handlers = new CommandHandlers().on('stopSolution', async () => ({ stopping: false }));
    expect(() => handlers.on('stopSolution', async () => ({ stopping: true }))).toThrow(/has a handler already/);
  });

  it('names the kinds of the table that have no handler', () => {
    const handlers = new CommandHandlers().on('stopSolution', async () => ({ stopping: false }));
    expect(handlers.kinds()).toEqual(['stopSolution']);
    expect(handlers.missing()).toEqual(Object.keys(COMMANDS).filter((k) => k !== 'stopSolution'));
  });
});
