import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AgentSession, type ChannelSocket, type SessionHandlers } from '../../../../service/gateway/agent-session.js';
import { CLOSE, PROTOCOL_VERSION } from '../../../../src/protocol/channel.js';

/** A socket stand-in: records what the session sends and how it closes. */
class FakeSocket implements ChannelSocket {
  readyState = 1;
  sent: Array<Record<string, unknown>> = [];
  closedWith: number | undefined;
  terminated = false;
  send(data: string): void {
    this.sent.push(JSON.parse(data) as Record<string, unknown>);
  }
  close(code?: number): void {
    this.closedWith = code;
    this.readyState = 3;
  }
  terminate(): void {
    this.terminated = true;
    this.readyState = 3;
  }
}

const log = pino({ level: 'silent' });
const helloMsg = {
  id: 'h',
  type: 'hello',
  protocolVersion: PROTOCOL_VERSION,
  version: '1',
  machineName: 'm',
  serviceName: 's',
  fingerprint: 'fingerprint',
  pid: 1,
  startedAt: new Date().toISOString(),
  status: 'Running',
  installedConnectors: [],
};

function session(handlers: Partial<SessionHandlers> = {}) {
  const socket = new FakeSocket();
  const closed: number[] = [];
  const s = new AgentSession(socket, {
    agentId: 'a1',
    orgId: 1,
    origin: 'http://ferry.test:8780',
    log,
    handlers: {
      hello: async () => ({ serverTime: 'now', heartbeatMs: 30_000, agentName: 'n', orgId: 1 }),
      heartbeat: async () => ({}),
      report: async () => undefined,
      closed: (_s, code) => closed.push(code),
      ...handlers,
    },
  });
  const receive = (msg: unknown) => s.receive(Buffer.from(typeof msg === 'string' ? msg : JSON.stringify(msg)), false);
  const settle = () => vi.advanceTimersByTimeAsync(0);
  return { s, socket, closed, receive, settle };
}

describe('an Agent session', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('correlates command replies by ID and resolves with the result', async () => {
    const { s, socket, receive } = session();
    const pending = s.request({ type: 'zipLogs', logId: 'l1', uploadUrl: '/v1/agent/logs/l1' }, 10_000);
    const cmd = socket.sent[0] as { id: string; uploadUrl: string };
    expect(cmd.uploadUrl).toBe('http://ferry.test:8780/v1/agent/logs/l1');
    receive({ re: 'someone-else', ok: true });
    receive({ re: cmd.id, ok: true, result: { accepted: true } });
    await expect(pending).resolves.toEqual({ accepted: true });
  });

  it('rejects a command without a reply in time with CHN_TIMEOUT, and an error reply with AGT_COMMAND_FAILED', async () => {
    const { s, socket, receive } = session();
    const slow = s.request({ type: 'restart', restartNow: false }, 10_000);
    const check = expect(slow).rejects.toMatchObject({ code: 'CHN_TIMEOUT' });
    await vi.advanceTimersByTimeAsync(10_000);
    await check;
    const refused = s.request({ type: 'restart', restartNow: true }, 10_000);
    const id = (socket.sent[1] as { id: string }).id;
    receive({ re: id, ok: false, error: { code: 'AGT_DRAINING', kind: 'transient', message: 'busy' } });
    await expect(refused).rejects.toMatchObject({
      code: 'AGT_COMMAND_FAILED',
      details: { agentErrorCode: 'AGT_DRAINING' },
    });
  });

  it('rejects waiting commands with AGT_NOT_CONNECTED when the socket closes', async () => {
    const { s, closed } = session();
    const pending = s.request({ type: 'restart', restartNow: false }, 10_000);
    s.onClosed(1006);
    await expect(pending).rejects.toMatchObject({ code: 'AGT_NOT_CONNECTED' });
    expect(closed).toEqual([1006]);
    await expect(s.request({ type: 'restart', restartNow: false }, 10)).rejects.toMatchObject({
      code: 'AGT_NOT_CONNECTED',
    });
  });

  it('pings every interval and terminates a socket silent for the idle time-out', () => {
    const { s, socket, receive, closed } = session();
    const t0 = Date.now();
    s.keepalive(t0 + 10_000, 20_000, 60_000);
    expect(socket.sent).toEqual([]);
    s.keepalive(t0 + 20_000, 20_000, 60_000);
    expect(socket.sent.map((m) => m['type'])).toEqual(['ping']);
    vi.setSystemTime(t0 + 30_000);
    receive({ type: 'pong', at: 'x' });
    s.keepalive(t0 + 89_000, 20_000, 60_000);
    expect(socket.terminated).toBe(false);
    s.keepalive(t0 + 90_000, 20_000, 60_000);
    expect(socket.terminated).toBe(true);
    expect(closed).toEqual([1006]);
  });

  it('answers requests in order, after the hello, and refuses them before it', async () => {
    const order: string[] = [];
    const { socket, receive, settle } = session({
      heartbeat: async () => {
        order.push('heartbeat');
        return {};
      },
      report: async () => {
        order.push('report');
      },
    });
    receive({ id: 'early', type: 'heartbeat', at: 'x', status: 'Running', rssBytes: 1, runningWork: 0 });
    await settle();
    expect(socket.sent[0]).toMatchObject({ re: 'early', ok: false, error: { code: 'CHN_HELLO_REQUIRED' } });
    receive(helloMsg);
    receive({ id: 'r1', type: 'report', at: 'x', report: { kind: 'status', at: 'x', status: 'Running' } });
    receive({ id: 'b1', type: 'heartbeat', at: 'x', status: 'Running', rssBytes: 1, runningWork: 0 });
    await settle();
    expect(socket.sent.slice(1).map((m) => m['re'])).toEqual(['h', 'r1', 'b1']);
    expect(order).toEqual(['report', 'heartbeat']);
  });

  it('answers a bad message that has an ID, counts the others, and closes with 4400 at 20 in a minute', async () => {
    const { socket, receive } = session();
    receive({ id: 'x1', type: 'nonsense' });
    expect(socket.sent[0]).toMatchObject({
      re: 'x1',
      ok: false,
      error: { code: 'CHN_INVALID_MESSAGE', kind: 'config' },
    });
    for (let i = 0; i < 10; i++) receive('not json');
    vi.advanceTimersByTime(61_000);
    // The first 11 are out of the window now: 19 more are tolerated, the 20th closes.
    for (let i = 0; i < 19; i++) receive('[]');
    expect(socket.closedWith).toBeUndefined();
    receive('{');
    expect(socket.closedWith).toBe(CLOSE.protocolError);
  });

  it('refuses a message nested deeper than 100 levels, answering its ID so that the Agent sets it aside', async () => {
    const reports: unknown[] = [];
    const { s, socket, receive, settle } = session({
      report: async (_sess, msg) => {
        reports.push(msg);
      },
    });
    receive(helloMsg);
    await settle();
    const nested = (depth: number): string => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
    const report = (id: string, depth: number): string =>
      `{"id":"${id}","type":"report","at":"x","report":{"kind":"logArchiveFailed","logId":"l1","error":{"code":"X","kind":"system","message":"m","details":{"d":${nested(depth)}}}}}`;
    receive(report('deep', 20_000));
    receive(report('fine', 90));
    await settle();
    expect(socket.sent.slice(1)).toMatchObject([
      { re: 'deep', ok: false, error: { code: 'CHN_INVALID_MESSAGE', kind: 'config' } },
      { re: 'fine', ok: true },
    ]);
    expect(reports).toHaveLength(1);

    // A reply that deep fails its command instead of handing the value to the caller.
    const pending = s.request({ type: 'restart', restartNow: false }, 10_000);
    const id = (socket.sent.at(-1) as { id: string }).id;
    receive(`{"re":"${id}","ok":true,"result":${'['.repeat(5_000)}${']'.repeat(5_000)}}`);
    await expect(pending).rejects.toMatchObject({
      code: 'AGT_COMMAND_FAILED',
      details: { agentErrorCode: 'CHN_INVALID_MESSAGE' },
    });
  });

  it('counts a binary frame as a bad message without answering it', () => {
    const { s, socket } = session();
    s.receive(Buffer.from([1, 2, 3]), true);
    expect(socket.sent).toEqual([]);
    expect(socket.closedWith).toBeUndefined();
  });

  it('replies SVC_UNAVAILABLE when a handler fails unexpectedly, and closes after the reply when asked', async () => {
    const { s, socket, receive, settle } = session({
      hello: async (sess) => {
        sess.closeAfterReply(CLOSE.clonedInstall, 'clone');
        throw new Error('boom');
      },
    });
    receive(helloMsg);
    await settle();
    expect(socket.sent[0]).toMatchObject({ re: 'h', ok: false, error: { code: 'SVC_UNAVAILABLE', kind: 'transient' } });
    expect(socket.closedWith).toBe(CLOSE.clonedInstall);
    expect(s.greeted).toBe(false);
  });
});
