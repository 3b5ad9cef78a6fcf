import { describe, expect, it } from 'vitest';
import { AgentCommands, type AgentCommand } from '../../../../service/agents/commands.js';
import type { CommandBus } from '../../../../service/gateway/command-bus.js';
import { commandFailed } from '../../../../service/gateway/agent-command.js';
import { FerryError } from '../../../../src/errors/ferry-error.js';

/** The Agent's error reply as the session rejects it (service/gateway/agent-session.ts). */
const agentError = (code: string): FerryError =>
  commandFailed('a1', 'startSolution', { code, kind: 'transient', message: code });

/** A bus that records what is sent and answers from a script, one entry per send. */
function scriptedBus(answers: Array<unknown>): {
  bus: CommandBus;
  sent: Array<{ command: AgentCommand; timeoutMs: number }>;
} {
  const sent: Array<{ command: AgentCommand; timeoutMs: number }> = [];
  const bus: CommandBus = {
    send: (_agentId, command, timeoutMs) => {
      sent.push({ command, timeoutMs });
      const next = answers.shift();
      return next instanceof Error ? Promise.reject(next) : Promise.resolve(next);
    },
    isConnected: () => true,
    channelOf: () => undefined,
    disconnect: () => undefined,
  };
  return { bus, sent };
}

const policy = (syncs: string[]) => ({
  sync: (agentId: string) => {
    syncs.push(agentId);
    return Promise.resolve();
  },
  draining: 'The Agent of Solution S is waiting to restart; start it again once the Agent is Running.',
  details: { solutionId: 's1' },
});

describe('AgentCommands', () => {
  it("sends with the kind's time-out and resolves with the parsed result", async () => {
    const { bus, sent } = scriptedBus([{ running: true, runId: 'r1', processed: 5, failed: 1, extra: 'dropped' }]);
    const result = await new AgentCommands(bus).send('a1', { type: 'monitorSolution', solutionId: 's1' });
    expect(result).toEqual({ running: true, runId: 'r1', processed: 5, failed: 1 });
    expect(sent).toEqual([{ command: { type: 'monitorSolution', solutionId: 's1' }, timeoutMs: 10_000 }]);
  });

  it('rejects a result that does not parse with AGT_COMMAND_FAILED naming the command', async () => {
    const { bus } = scriptedBus([{ running: 'yes' }]);
    const sending = new AgentCommands(bus).send('a1', { type: 'monitorSolution', solutionId: 's1' });
    await expect(sending).rejects.toMatchObject({
      code: 'AGT_COMMAND_FAILED',
      details: { agentId: 'a1', command: 'monitorSolution' },
    });
    await expect(sending).rejects.toThrow(/monitorSolution command with a result this Service cannot read \(running: /);
  });

  it('takes any reply, or none, as the acknowledgement of a command whose result the Service does not read', async () => {
    const { bus, sent } = scriptedBus([undefined, { accepted: 'yes' }]);
    const commands = new AgentCommands(bus);
    await expect(commands.send('a1', { type: 'restart', restartNow: false })).resolves.toBeUndefined();
    await expect(
      commands.send('a1', { type: 'zipLogs', logId: 'l1', uploadUrl: '/v1/agent/logs/l1' }),
    ).resolves.toBeUndefined();
    expect(sent.map((s) => s.timeoutMs)).toEqual([10_000, 10_000]);
  });

  it('passes the errors of the bus through unchanged', async () => {
    const { bus } = scriptedBus([new FerryError('CHN_TIMEOUT', 'no answer')]);
    await expect(new AgentCommands(bus).send('a1', { type: 'stopSolution', solutionId: 's1' })).rejects.toMatchObject({
      code: 'CHN_TIMEOUT',
    });
  });

  describe('commands about a Solution', () => {
    it('brings an Agent that does not hold the Solution up to date and asks again with a command built again', async () => {
      const { bus, sent } = scriptedBus([agentError('AGT_SOLUTION_NOT_HELD'), { started: true }]);
      const syncs: string[] = [];
      let version = 1;
      const answer = await new AgentCommands(bus).sendAboutSolution(
        'a1',
        async () => ({ type: 'startSolution', solutionId: 's1', runId: 'r1', version: `v${version++}` }) as const,
        policy(syncs),
      );
      expect(answer).toEqual({ started: true });
      expect(syncs).toEqual(['a1']);
      expect(sent.map((s) => s.command)).toEqual([
        { type: 'startSolution', solutionId: 's1', runId: 'r1', version: 'v1' },
        { type: 'startSolution', solutionId: 's1', runId: 'r1', version: 'v2' },
      ]);
    });

    it('asks again once only: a second AGT_SOLUTION_NOT_HELD reaches the caller', async () => {
      const { bus, sent } = scriptedBus([agentError('AGT_SOLUTION_NOT_HELD'), agentError('AGT_SOLUTION_NOT_HELD')]);
      const syncs: string[] = [];
      const sending = new AgentCommands(bus).sendAboutSolution(
        'a1',
        async () =>
          ({
            type: 'reprocessRun',
            solutionId: 's1',
            runId: 'r1',
            executionId: 7,
            maps: [{ mapId: 1, records: 2 }],
          }) as const,
        policy(syncs),
      );
      await expect(sending).rejects.toMatchObject({
        code: 'AGT_COMMAND_FAILED',
        details: { agentErrorCode: 'AGT_SOLUTION_NOT_HELD' },
      });
      expect(sent).toHaveLength(2);
      expect(syncs).toEqual(['a1']);
    });

    it("turns AGT_DRAINING, first or after the retry, into the caller's 409 AGT_DRAINING", async () => {
      for (const script of [
        [agentError('AGT_DRAINING')],
        [agentError('AGT_SOLUTION_NOT_HELD'), agentError('AGT_DRAINING')],
      ]) {
        const { bus } = scriptedBus(script);
        const sending = new AgentCommands(bus).sendAboutSolution(
          'a1',
          async () => ({ type: 'startSolution', solutionId: 's1', runId: 'r1' }) as const,
          policy([]),
        );
        await expect(sending).rejects.toMatchObject({
          code: 'AGT_DRAINING',
          message: 'The Agent of Solution S is waiting to restart; start it again once the Agent is Running.',
          details: { solutionId: 's1', agentId: 'a1', agentErrorCode: 'AGT_DRAINING' },
        });
      }
    });

    it('passes any other error through without a retry', async () => {
      const { bus, sent } = scriptedBus([agentError('AGT_RUN_ABANDONED')]);
      const syncs: string[] = [];
      const sending = new AgentCommands(bus).sendAboutSolution(
        'a1',
        async () => ({ type: 'startSolution', solutionId: 's1', runId: 'r1' }) as const,
        policy(syncs),
      );
      await expect(sending).rejects.toMatchObject({
        code: 'AGT_COMMAND_FAILED',
        details: { agentErrorCode: 'AGT_RUN_ABANDONED' },
      });
      expect(sent).toHaveLength(1);
      expect(syncs).toEqual([]);
    });
  });
});
