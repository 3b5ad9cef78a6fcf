import { describe, expect, it } from 'vitest';
import { ReportHandlers } from '../../../../service/gateway/report-handlers.js';
import type { AgentRow } from '../../../../service/store/schema.js';
import type { Db } from '../../../../service/store/sql.js';
import type { ReportBody } from '../../../../src/protocol/channel.js';

const NOW = '2026-03-01T12:00:00.000Z';
// The handlers under test never touch the transaction or read more of the Agent than its ID.
const tx = {} as Db;
const agent = { id: 'agent-1' } as AgentRow;
const install: ReportBody = {
  kind: 'connectorInstall',
  operation: 'install',
  connectorId: 'csv',
  version: '1.0.0',
  status: 'Installed',
  installed: [],
};
const logFailed: ReportBody = {
  kind: 'logArchiveFailed',
  logId: 'log-1',
  error: { code: 'AGT_LOG_ARCHIVE', kind: 'system', message: 'disk full' },
};

describe('report handlers', () => {
  it('runs the handlers of the report kind only, in the order they were registered, with the report as sent', async () => {
    const calls: string[] = [];
    const handlers = new ReportHandlers()
      .on(
        'connectorInstall',
        async (_tx, a, r, now) => void calls.push(`first ${a.id} ${r.connectorId} ${r.status} ${now}`),
      )
      .on('logArchiveFailed', async (_tx, a, r) => void calls.push(`log ${a.id} ${r.logId} ${r.error.message}`))
      .on('connectorInstall', async () => void calls.push('second'));
    await handlers.apply(tx, agent, install, NOW);
    expect(calls).toEqual([`first agent-1 csv Installed ${NOW}`, 'second']);
    calls.length = 0;
    await handlers.apply(tx, agent, logFailed, NOW);
    expect(calls).toEqual(['log agent-1 log-1 disk full']);
  });

  it('does nothing for a kind without handlers', async () => {
    const calls: string[] = [];
    const handlers = new ReportHandlers().on('logArchiveFailed', async () => void calls.push('log'));
    await expect(
      handlers.apply(tx, agent, { kind: 'started', at: NOW, version: '1.0.0' }, NOW),
    ).resolves.toBeUndefined();
    expect(calls).toEqual([]);
  });

  it('waits for one handler before the next and lets a failure reach the caller (the report transaction rolls back)', async () => {
    const calls: string[] = [];
    const handlers = new ReportHandlers()
      .on('connectorInstall', async () => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        calls.push('slow');
      })
      .on('connectorInstall', async () => {
        calls.push('after');
        throw new Error('store failed');
      });
    await expect(handlers.apply(tx, agent, install, NOW)).rejects.toThrow('store failed');
    expect(calls).toEqual(['slow', 'after']);
  });
});
