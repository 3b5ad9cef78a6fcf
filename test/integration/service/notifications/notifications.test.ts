import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { simpleParser } from 'mailparser';
import pino from 'pino';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildService, REDACT_PATHS, type BuildOptions } from '../../../../service/build-service.js';
import type { ServiceConfigInput } from '../../../../service/config.js';
import type { ReportBody } from '../../../../src/protocol/channel.js';
import type { RunResult } from '../../../../src/protocol/solutions.js';
import { MailSender } from '../../../../service/notifications/outbox.js';
import { smtpMailer } from '../../../../service/notifications/mailer.js';
import { enqueueMails } from '../../../../service/store/repos/mail-outbox.repo.js';
import { OpenChannels, registerTestAgent, TestChannel, until, type TestAgent } from '../../../helpers/agent-client.js';
import { request, testServiceConfig, type Credentials, type TestService } from '../../../helpers/service.js';
import { createTestDatabase, STORE_TARGETS, type StoreTarget } from '../../../helpers/stores.js';
import { addUser } from '../../../helpers/users.js';

const CSV = 'd2227fbd-50de-482d-9fa3-d5c685da7ba4';
const SMTP_USER = 'ferry-mailer';
const SMTP_PASS = 'Smtp-secret-pass-9';
const FROM = 'Ferry Alerts <alerts@ferry.test>';
/** The test mail server refuses this recipient for good (550). */
const REFUSED = 'gone@ferry.test';
/** The sender loop at test pace: a failed attempt is retried within a second. */
const FAST_MAIL: BuildOptions['mailOutbox'] = { pollMs: 50, retryBaseMs: 200, retryMaxMs: 800 };

interface ReceivedMail {
  to: string[];
  from: string;
  subject: string;
  text: string;
}

/** A real SMTP server on a loopback port that keeps what it is given; it can be stopped and started again on its port. */
class MailCatcher {
  readonly mails: ReceivedMail[] = [];
  #server: SMTPServer | undefined;
  port = 0;

  async start(): Promise<void> {
    const server = new SMTPServer({
      // Loopback only: no TLS, and AUTH over the plain connection.
      disabledCommands: ['STARTTLS'],
      allowInsecureAuth: true,
      logger: false,
      onAuth: (auth, _session, cb) => {
        if (auth.username === SMTP_USER && auth.password === SMTP_PASS) cb(null, { user: auth.username });
        else cb(new Error('Invalid username or password'));
      },
      onRcptTo: (address, _session, cb) => {
        if (address.address === REFUSED) {
          cb(Object.assign(new Error('mailbox unavailable'), { responseCode: 550 }));
          return;
        }
        cb();
      },
      onData: (stream, session, cb) => {
        simpleParser(stream)
          .then((parsed) => {
            this.mails.push({
              to: session.envelope.rcptTo.map((r) => r.address),
              from: (parsed.from?.value ?? []).map((a) => `${a.name} <${a.address ?? ''}>`).join(', '),
              subject: parsed.subject ?? '',
              text: parsed.text ?? '',
            });
            cb();
          })
          .catch((err: unknown) => cb(err instanceof Error ? err : new Error(String(err))));
      },
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.server.address() as AddressInfo).port;
    this.#server = server;
  }

  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  get url(): string {
    return `smtp://${SMTP_USER}:${SMTP_PASS}@127.0.0.1:${this.port}`;
  }

  to(email: string): ReceivedMail[] {
    return this.mails.filter((m) => m.to.includes(email));
  }
}

/** A test Service like helpers/service.ts's, whose log lines are kept. */
interface LoggedService extends TestService {
  readonly logs: string[];
}

async function startLoggedService(
  target: StoreTarget,
  overrides: Partial<ServiceConfigInput>,
  opts: Omit<BuildOptions, 'logger'> = {},
): Promise<LoggedService> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-test-'));
  const database = target.name === 'postgres' ? await createTestDatabase() : undefined;
  const config = testServiceConfig(dataDir, database?.url, { cloudAgents: 'off', ...overrides });
  const logs: string[] = [];
  const logger = pino(
    { level: 'debug', redact: { paths: REDACT_PATHS, censor: '[redacted]' } },
    { write: (line: string) => void logs.push(line) },
  );
  const service = await buildService(config, { ...opts, logger });
  const url = await service.listen();
  const agent = new http.Agent({ keepAlive: true });
  return {
    url,
    admin: { email: config.adminEmail, password: config.adminPassword ?? '' },
    orgId: service.bootstrap.orgId,
    service,
    dataDir,
    logs,
    request: (method, pathAndQuery, o = {}) => request(url, agent, method, pathAndQuery, o),
    async close() {
      agent.destroy();
      await service.close();
      await database?.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

type Switches = Partial<
  Record<
    'connectorActivationEmail' | 'eventFailedJobEmail' | 'failedJobEmail' | 'failedRowsEmail' | 'heartbeatEmail',
    boolean
  >
>;
const ALL_OFF: Required<Switches> = {
  connectorActivationEmail: false,
  eventFailedJobEmail: false,
  failedJobEmail: false,
  failedRowsEmail: false,
  heartbeatEmail: false,
};

/** Sets a user's switches in the Service's Organization through the API (`alertsettings`: the older clients' path). */
async function setSwitches(
  svc: TestService,
  who: Credentials & { id?: string },
  switches: Switches,
  pathName = 'notificationsettings',
): Promise<void> {
  const me = await svc.request<{ id: string }>('GET', '/v1/users', { auth: who });
  const list = await svc.request<Array<{ orgId: number; orgName: string; tenantId: string }>>(
    'GET',
    `/v1/users/${me.body.id}/${pathName}`,
    { auth: who },
  );
  expect(list.status, list.text).toBe(200);
  const membership = list.body.find((m) => m.orgId === svc.orgId);
  expect(membership).toBeDefined();
  const res = await svc.request<Switches>('PUT', `/v1/users/${me.body.id}/${pathName}`, {
    auth: who,
    body: { orgName: membership?.orgName, tenantId: membership?.tenantId, ...ALL_OFF, ...switches },
  });
  expect(res.status, res.text).toBe(200);
  expect(res.body).toMatchObject({ ...ALL_OFF, ...switches });
}

/** Whether every queued mail of the Service was sent. */
async function outboxSettled(svc: TestService): Promise<true | undefined> {
  const open = await svc.service.store.db
    .selectFrom('mailOutbox')
    .select('id')
    .where('sentAt', 'is', null)
    .where('failedAt', 'is', null)
    .execute();
  return open.length === 0 ? true : undefined;
}

describe.each(STORE_TARGETS)('Notification mails on $name', (target) => {
  const smtp = new MailCatcher();
  let svc: LoggedService;
  let agent: TestAgent;
  let ch: TestChannel;
  let S: string;
  const channels = new OpenChannels();
  let alice: Credentials & { id: string };
  let bob: Credentials & { id: string };
  let carol: Credentials & { id: string };

  const send = async (report: ReportBody): Promise<void> => {
    const reply = await ch.report(report);
    expect(reply, JSON.stringify(reply)).toMatchObject({ ok: true });
  };
  const solution = async (name: string, solutionType = 'Integration'): Promise<string> => {
    const res = await svc.request<{ id: string }>('POST', S, { body: { name, solutionType, agentId: agent.agentId } });
    expect(res.status, res.text).toBe(201);
    return res.body.id;
  };
  /** A run of the Solution reported by its Agent: started, errors, finished; resolves to its History ID. */
  const run = async (
    solutionId: string,
    result: RunResult,
    failed: number,
    runId = randomUUID(),
  ): Promise<{ runId: string; historyId: number; end: ReportBody }> => {
    const startedAt = new Date(Date.now() - 60_000).toISOString();
    await send({ kind: 'runStarted', runId, solutionId, trigger: 'start', at: startedAt });
    if (failed > 0) {
      const errors = Array.from({ length: failed }, (_, i) => ({
        id: randomUUID(),
        mapId: 1,
        mapName: 'Accounts',
        sourceEntity: 'account',
        code: 'RUN_WRITE_FAILED',
        errorMessage: `record ${i} refused`,
        errorDetail: '',
        canReprocess: true,
      }));
      await send({ kind: 'runErrors', runId, solutionId, errors });
    }
    const end: ReportBody = {
      kind: 'runFinished',
      runId,
      solutionId,
      trigger: 'start',
      startedAt,
      at: new Date().toISOString(),
      result,
      processed: 10,
      failed,
      ...(result.includes('Fatal') ? { details: 'the target refused the connection' } : {}),
      stopped: false,
      sourceDataLocal: true,
      statistics: [],
    };
    await send(end);
    const row = await svc.service.store.db
      .selectFrom('executions')
      .select('id')
      .where('runId', '=', runId)
      .executeTakeFirstOrThrow();
    return { runId, historyId: row.id, end };
  };
  /** The mails that arrive from now until the outbox is empty and `expected` arrived. */
  const mailsAfter = async (action: () => Promise<void>, expected: number): Promise<ReceivedMail[]> => {
    const before = smtp.mails.length;
    await action();
    await until(
      async () => ((await outboxSettled(svc)) && smtp.mails.length - before >= expected ? true : undefined),
      `${expected} mails`,
    );
    // Anything extra would have been queued with the event, so it is sent by now too.
    return smtp.mails.slice(before);
  };

  beforeAll(async () => {
    await smtp.start();
    svc = await startLoggedService(target, { smtpUrl: smtp.url, smtpFrom: FROM }, { mailOutbox: FAST_MAIL });
    S = `/v1/orgs/${svc.orgId}/solutions`;
    agent = await registerTestAgent(svc, { name: 'Mail agent' });
    ch = await channels.connect(svc, agent);
    ch.autoReply = (cmd) => ({
      re: cmd['id'],
      ok: true,
      result: cmd['type'] === 'assignSolutions' ? { need: [] } : {},
    });
    expect(await ch.hello(agent)).toMatchObject({ ok: true });
    alice = await addUser(svc, svc.orgId, 'Administrator', 'alice@ferry.test');
    bob = await addUser(svc, svc.orgId, 'User', 'bob@ferry.test');
    carol = await addUser(svc, svc.orgId, 'User', 'carol@ferry.test');
    // The administrator starts with most switches on: off here, so only the users below get mail.
    await setSwitches(svc, svc.admin, {});
    await setSwitches(
      svc,
      alice,
      {
        failedJobEmail: true,
        failedRowsEmail: true,
        eventFailedJobEmail: true,
        connectorActivationEmail: true,
        heartbeatEmail: true,
      },
      'alertsettings',
    );
    await setSwitches(svc, bob, {});
    await setSwitches(svc, carol, { eventFailedJobEmail: true });
  });
  afterAll(async () => {
    await channels.closeAll();
    await svc?.close();
    await smtp.stop();
  });

  it('says at start which mail server it uses, never its password', () => {
    const lines = svc.logs.filter((l) => l.includes('notification mails go through the configured mail server'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`smtp://127.0.0.1:${smtp.port}`);
    expect(svc.logs.join('\n')).not.toContain(SMTP_PASS);
  });

  it('mails a failed execution to the users who switched failedJobEmail on, with what happened and where to look', async () => {
    const id = await solution('Nightly orders');
    let historyId = 0;
    const mails = await mailsAfter(async () => {
      ({ historyId } = await run(id, 'FatalError', 0));
    }, 1);
    expect(mails.map((m) => m.to)).toEqual([[alice.email]]);
    const [mail] = mails;
    expect(mail?.from).toBe(FROM);
    expect(mail?.subject).toBe('[Ferry] Solution "Nightly orders" failed: FatalError');
    expect(mail?.text).toContain('Agent: Mail agent');
    expect(mail?.text).toContain('Result: FatalError');
    expect(mail?.text).toContain('Details: the target refused the connection');
    expect(mail?.text).toContain(`GET /v1/orgs/${svc.orgId}/solutions/${id}/history/${historyId}`);
    expect(mail?.text).not.toContain(agent.agentSecret);
  });

  it('mails record failures to failedRowsEmail, both mails for RecordErrorsAndFatalErrors, nothing for a success', async () => {
    const id = await solution('Contacts sync');
    const rows = await mailsAfter(async () => void (await run(id, 'CompletedWithErrors', 2)), 1);
    expect(rows.map((m) => [m.to, m.subject])).toEqual([
      [[alice.email], '[Ferry] Solution "Contacts sync": 2 records failed'],
    ]);
    expect(rows[0]?.text).toContain('Records failed: 2');
    expect(rows[0]?.text).toMatch(/history\/\d+\/errors/);

    const both = await mailsAfter(async () => void (await run(id, 'RecordErrorsAndFatalErrors', 1)), 2);
    expect(both.map((m) => m.to)).toEqual([[alice.email], [alice.email]]);
    expect(both.map((m) => m.subject).sort()).toEqual([
      '[Ferry] Solution "Contacts sync" failed: RecordErrorsAndFatalErrors',
      '[Ferry] Solution "Contacts sync": 1 record failed',
    ]);

    const none = await mailsAfter(async () => void (await run(id, 'CompletedSuccessfully', 0)), 0);
    expect(none).toEqual([]);
  });

  it('mails an Event Solution failure only to those who get no failed-run or failed-records mail for it', async () => {
    const id = await solution('Order events', 'IntegrationEvent');
    const mails = await mailsAfter(async () => void (await run(id, 'FatalError', 0)), 2);
    const byRecipient = Object.fromEntries(mails.map((m) => [m.to.join(','), m.subject]));
    expect(mails).toHaveLength(2);
    expect(byRecipient).toEqual({
      [alice.email]: '[Ferry] Solution "Order events" failed: FatalError',
      [carol.email]: '[Ferry] Event Solution "Order events" failed: FatalError',
    });
    expect(smtp.to(bob.email)).toEqual([]);
  });

  it('mails a run once, however often its end is reported', async () => {
    const id = await solution('Resent ends');
    let end: ReportBody | undefined;
    const first = await mailsAfter(async () => void ({ end } = await run(id, 'FatalError', 0)), 1);
    expect(first).toHaveLength(1);
    // The Agent re-sends the end under a new message ID (as after a crash before the acknowledgement).
    const again = await mailsAfter(async () => {
      if (end) await send(end);
    }, 0);
    expect(again).toEqual([]);
  });

  it('mails a Connector uninstall and install to connectorActivationEmail', async () => {
    const K = `/v1/orgs/${svc.orgId}/connectors`;
    const removed = await mailsAfter(async () => {
      const res = await svc.request('DELETE', `${K}/${CSV}/delete`);
      expect(res.status, res.text).toBe(204);
    }, 1);
    expect(removed.map((m) => [m.to, m.subject])).toEqual([
      [[alice.email], `[Ferry] Connector "CSV" uninstalled from Ferry`],
    ]);
    const added = await mailsAfter(async () => {
      const res = await svc.request('POST', `${K}/${CSV}/install`);
      expect(res.status, res.text).toBe(200);
    }, 1);
    expect(added.map((m) => [m.to, m.subject])).toEqual([
      [[alice.email], `[Ferry] Connector "CSV" installed in Ferry`],
    ]);
    expect(added[0]?.text).toContain(`GET /v1/orgs/${svc.orgId}/connectors/${CSV}`);
    expect(added[0]?.text).toContain(`By: ${svc.admin.email}`);
  });

  it('keeps mail queued while the mail server is down and sends it once when it is back', async () => {
    await smtp.stop();
    const id = await solution('During the outage');
    const before = smtp.mails.length;
    const { historyId } = await run(id, 'FatalError', 0);
    // The sender tried and failed at least once; the mail is still queued.
    await until(async () => {
      const row = await svc.service.store.db
        .selectFrom('mailOutbox')
        .selectAll()
        .where('dedupeKey', '=', `failedJobEmail:execution:${historyId}:${alice.id}`)
        .executeTakeFirst();
      return row && row.attempts >= 2 && row.sentAt === null ? row : undefined;
    }, 'failed attempts');
    expect(svc.logs.filter((l) => l.includes('mail server not reachable')).length).toBeGreaterThanOrEqual(1);
    expect(svc.logs.join('\n')).not.toContain(SMTP_PASS);
    await smtp.start();
    await until(async () => outboxSettled(svc), 'the queued mail sent');
    const arrived = smtp.mails.slice(before).filter((m) => m.subject.includes('During the outage'));
    expect(arrived.map((m) => m.to)).toEqual([[alice.email]]);
    // Later passes do not send it again.
    await new Promise((r) => setTimeout(r, 500));
    expect(smtp.mails.slice(before).filter((m) => m.subject.includes('During the outage'))).toHaveLength(1);
  });

  it('gives up a mail the server refuses for good, and still sends the others', async () => {
    const gone = await addUser(svc, svc.orgId, 'User', REFUSED);
    await setSwitches(svc, gone, { failedJobEmail: true });
    const id = await solution('Refused recipient');
    const { historyId } = await run(id, 'FatalError', 0);
    await until(async () => outboxSettled(svc), 'the outbox settled');
    const rows = await svc.service.store.db
      .selectFrom('mailOutbox')
      .selectAll()
      .where('dedupeKey', 'like', `failedJobEmail:execution:${historyId}:%`)
      .execute();
    expect(rows.map((r) => [r.recipient, r.sentAt !== null, r.failedAt !== null, r.attempts]).sort()).toEqual([
      [alice.email, true, false, 1],
      [REFUSED, false, true, 1],
    ]);
    expect(smtp.to(REFUSED)).toEqual([]);
    expect(smtp.to(alice.email).filter((m) => m.subject.includes('Refused recipient'))).toHaveLength(1);
    await setSwitches(svc, gone, {});
  });

  it('sends each mail once when several senders claim from one store at the same time', async () => {
    const before = smtp.mails.length;
    const now = new Date().toISOString();
    const mails = Array.from({ length: 30 }, (_, i) => ({
      dedupeKey: `test:${randomUUID()}`,
      kind: 'failedJobEmail',
      orgId: svc.orgId,
      recipient: `many${i}@ferry.test`,
      subject: `Claim ${i}`,
      body: 'one of many',
    }));
    const log = pino({ level: 'silent' });
    const senders = [1, 2, 3].map(
      () =>
        new MailSender({
          store: svc.service.store,
          mailer: smtpMailer(smtp.url, FROM),
          smtpUrl: smtp.url,
          log,
          timing: { batch: 4 },
        }),
    );
    await enqueueMails(svc.service.store.db, mails, () => randomUUID(), now);
    // Passes of three senders (and the Service's own loop) race for the same rows.
    for (let round = 0; round < 10; round += 1) await Promise.all(senders.map((s) => s.pass()));
    await until(async () => outboxSettled(svc), 'all claimed mails sent');
    await Promise.all(senders.map((s) => s.stop()));
    const subjects = smtp.mails
      .slice(before)
      .map((m) => m.subject)
      .filter((s) => s.startsWith('Claim '));
    expect(subjects.sort()).toEqual(mails.map((m) => m.subject).sort());
  });
});

describe.each(STORE_TARGETS)('Heartbeat failure mails on $name', (target) => {
  const smtp = new MailCatcher();
  let svc: LoggedService;
  let dave: Credentials & { id: string };
  let erin: Credentials & { id: string };

  beforeAll(async () => {
    await smtp.start();
    svc = await startLoggedService(
      target,
      { smtpUrl: smtp.url, smtpFrom: FROM, heartbeatLateAfter: 0.2, heartbeatFailedAfter: 0.5 },
      { mailOutbox: FAST_MAIL },
    );
    dave = await addUser(svc, svc.orgId, 'User', 'dave@ferry.test');
    erin = await addUser(svc, svc.orgId, 'User', 'erin@ferry.test');
    await setSwitches(svc, svc.admin, {});
    await setSwitches(svc, dave, { heartbeatEmail: true });
    await setSwitches(svc, erin, { failedJobEmail: true, connectorActivationEmail: true });
  });
  afterAll(async () => {
    await svc?.close();
    await smtp.stop();
  });

  it('mails heartbeatEmail users once per move to HeartbeatFailed', async () => {
    const agent = await registerTestAgent(svc, { name: 'Quiet agent' });
    const status = async () =>
      (await svc.request<{ status: string }>('GET', `/v1/orgs/${svc.orgId}/agents/${agent.agentId}`)).body.status;
    const silence = async (): Promise<void> => {
      const ch = await TestChannel.connect(svc, agent);
      expect(await ch.hello(agent)).toMatchObject({ ok: true });
      await ch.close();
      await until(async () => ((await status()) === 'HeartbeatFailed' ? true : undefined), 'HeartbeatFailed');
      await until(async () => outboxSettled(svc), 'the outbox empty');
    };
    const subject = '[Ferry] Agent "Quiet agent" stopped sending heartbeats';

    await silence();
    await until(async () => (smtp.to(dave.email).length >= 1 ? true : undefined), 'the heartbeat mail');
    // More sweeps of the same silence send nothing more.
    await new Promise((r) => setTimeout(r, 600));
    expect(smtp.mails.map((m) => [m.to, m.subject])).toEqual([[[dave.email], subject]]);
    expect(smtp.mails[0]?.text).toContain(`GET /v1/orgs/${svc.orgId}/agents/${agent.agentId}`);
    expect(smtp.mails[0]?.text).toContain('Last contact: ');

    // Back, then silent again: a second move, a second mail.
    await silence();
    await until(async () => (smtp.to(dave.email).length >= 2 ? true : undefined), 'the second heartbeat mail');
    expect(smtp.mails.map((m) => [m.to, m.subject])).toEqual([
      [[dave.email], subject],
      [[dave.email], subject],
    ]);
    expect(smtp.to(erin.email)).toEqual([]);
  });
});

describe.each(STORE_TARGETS)('No mail server on $name', (target) => {
  const smtp = new MailCatcher();
  let svc: LoggedService;

  beforeAll(async () => {
    await smtp.start();
    // A mail server runs, but the Service is not told of it.
    svc = await startLoggedService(target, {}, { mailOutbox: FAST_MAIL });
  });
  afterAll(async () => {
    await svc?.close();
    await smtp.stop();
  });

  it('queues and sends nothing, and says so once at start', async () => {
    const agent = await registerTestAgent(svc, { name: 'Unmailed agent' });
    const ch = await TestChannel.connect(svc, agent);
    ch.autoReply = (cmd) => ({
      re: cmd['id'],
      ok: true,
      result: cmd['type'] === 'assignSolutions' ? { need: [] } : {},
    });
    expect(await ch.hello(agent)).toMatchObject({ ok: true });
    const user = await addUser(svc, svc.orgId, 'Administrator', 'frank@ferry.test');
    await setSwitches(svc, user, { failedJobEmail: true, failedRowsEmail: true, connectorActivationEmail: true });
    const created = await svc.request<{ id: string }>('POST', `/v1/orgs/${svc.orgId}/solutions`, {
      body: { name: 'Unmailed', solutionType: 'Integration', agentId: agent.agentId },
    });
    expect(created.status, created.text).toBe(201);
    const runId = randomUUID();
    const at = new Date().toISOString();
    const reply = await ch.report({
      kind: 'runFinished',
      runId,
      solutionId: created.body.id,
      trigger: 'start',
      startedAt: at,
      at,
      result: 'RecordErrorsAndFatalErrors',
      processed: 3,
      failed: 1,
      stopped: false,
      sourceDataLocal: true,
      statistics: [],
    });
    expect(reply).toMatchObject({ ok: true });
    expect((await svc.request('DELETE', `/v1/orgs/${svc.orgId}/connectors/${CSV}/delete`)).status).toBe(204);
    await ch.close();
    await new Promise((r) => setTimeout(r, 300));

    expect(await svc.service.store.db.selectFrom('mailOutbox').selectAll().execute()).toEqual([]);
    expect(smtp.mails).toEqual([]);
    expect(svc.logs.filter((l) => l.includes('no mail server configured'))).toHaveLength(1);
  });
});
