import { describe, expect, it } from 'vitest';
import { agentError, commandFailed, isAgentError, notConnected } from '../../../../service/gateway/agent-command.js';
import { FerryError, toErrorData } from '../../../../src/errors/ferry-error.js';

describe('an Agent error reply to a command', () => {
  const failed = commandFailed('a1', 'startSolution', {
    code: 'AGT_DRAINING',
    kind: 'transient',
    message: 'The Agent is draining.',
  });

  it('is AGT_COMMAND_FAILED naming the Agent and the command, with the Agent error as it was sent', () => {
    expect(failed).toMatchObject({
      code: 'AGT_COMMAND_FAILED',
      message: 'Agent a1 could not carry out the startSolution command: The Agent is draining.',
    });
    expect(agentError(failed)).toEqual({ code: 'AGT_DRAINING', kind: 'transient', message: 'The Agent is draining.' });
  });

  it('keeps the Agent error when it crosses a boundary as data and comes back', () => {
    const data = toErrorData(failed);
    expect(agentError(new FerryError(data.code, data.message, { details: data.details ?? {} }))).toEqual(
      agentError(failed),
    );
  });

  it('is matched by code', () => {
    expect(isAgentError(failed, 'AGT_DRAINING')).toBe(true);
    expect(isAgentError(failed, 'AGT_SOLUTION_NOT_HELD')).toBe(false);
  });

  it('is told apart from an Agent that did not answer, and from what is not a Ferry error', () => {
    expect(agentError(notConnected('a1'))).toBeUndefined();
    expect(agentError(new FerryError('CHN_TIMEOUT', 'No answer.'))).toBeUndefined();
    expect(agentError(new Error('AGT_DRAINING'))).toBeUndefined();
    expect(isAgentError(new FerryError('AGT_DRAINING', 'The Agent is draining.'), 'AGT_DRAINING')).toBe(false);
  });

  it('may carry a code without the Agent message: the refusal the Service words itself', () => {
    const refusal = new FerryError('AGT_DRAINING', 'Start the Solution again once the Agent is Running.', {
      details: { agentId: 'a1', agentErrorCode: 'AGT_DRAINING' },
    });
    expect(agentError(refusal)).toEqual({ code: 'AGT_DRAINING' });
  });
});
