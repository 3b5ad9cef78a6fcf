import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, page } from '../api.js';
import { go, href } from '../router.js';
import type { MapModel, Monitor, Solution } from '../types.js';
import {
  Action,
  ago,
  ErrorNote,
  field,
  FormSelect,
  Loading,
  messageOf,
  notify,
  Pager,
  Section,
  Status,
  Table,
  useInterval,
  useLoad,
  when,
} from '../util.js';

const STATUSES = [
  '',
  'Idle',
  'InProgress',
  'IdleLastRunFailed',
  'IdleLastRunRowErrors',
  'OnDemand',
  'OnDemandLastRunFailed',
  'OnDemandLastRunRowErrors',
  'Incomplete',
  'Disabled',
  'WaitingForEvent',
];

const S = (orgId: number, id: string): string => `/v1/orgs/${orgId}/solutions/${id}`;
const running = (s: Solution): boolean => /InProgress|Starting|Stopping/.test(s.status);

/** Start, stop, enable and disable: the same calls the API's clients make. */
function SolutionActions(props: {
  orgId: number;
  s: Solution;
  after: () => void;
  onStarted?: (runId: string) => void;
}): JSX.Element {
  const { orgId, s, after } = props;
  const then = <T,>(p: Promise<T>): Promise<T> => p.finally(after);
  return (
    <>
      <Action
        label="Start"
        kind="primary"
        disabled={s.isDisabled || running(s)}
        run={() => then(api<{ started: boolean; message?: string }>('POST', `${S(orgId, s.id)}/start`))}
        done={(a) => {
          const answer = a as { started: boolean; runId: string | null; message?: string | null };
          if (answer.started && answer.runId) props.onStarted?.(answer.runId);
          return answer.started ? `${s.name} started.` : `${s.name}: ${answer.message ?? 'not started'}`;
        }}
      />
      <Action
        label="Stop"
        disabled={!running(s)}
        run={() => then(api('POST', `${S(orgId, s.id)}/stop`))}
        done={`${s.name} is stopping.`}
      />
      <Action
        label={s.isDisabled ? 'Enable' : 'Disable'}
        run={async () => {
          const model = await api<Solution>('GET', S(orgId, s.id));
          return then(api('PUT', S(orgId, s.id), { body: { ...model, isDisabled: !s.isDisabled } }));
        }}
        done={`${s.name} is ${s.isDisabled ? 'enabled' : 'disabled'}.`}
      />
    </>
  );
}

export function SolutionsPage({ orgId, query }: { orgId: number; query: URLSearchParams }): JSX.Element {
  const [offset, setOffset] = useState(0);
  const name = query.get('name') ?? '';
  const status = query.get('status') ?? '';
  const loaded = useLoad(
    () =>
      page<Solution>(`/v1/orgs/${orgId}/solutions`, offset, { solutionNameFilter: name, solutionStatusFilter: status }),
    [orgId, offset, name, status],
  );
  useInterval(loaded.reload, 5_000);
  const filter = (e: Event): void => {
    e.preventDefault();
    const f = new FormData(e.currentTarget as HTMLFormElement);
    setOffset(0);
    go(href(orgId, 'solutions'), { name: field(f, 'name'), status: field(f, 'status') });
  };
  return (
    <>
      <h1>Solutions</h1>
      <form class="filters" onSubmit={filter} role="search">
        <label>
          Name contains <input name="name" defaultValue={name} />
        </label>
        <label>
          Status
          <FormSelect name="status" initial={status} options={STATUSES.map((x): [string, string] => [x, x || 'any'])} />
        </label>
        <button type="submit">Filter</button>
      </form>
      <Loading loaded={loaded} />
      <Table
        caption="Solutions"
        head={['Solution', 'Status', 'Last run', 'Next run', 'Actions']}
        empty="No Solution matches."
      >
        {(loaded.data?.items ?? []).map((s) => (
          <tr key={s.id} data-solution={s.name}>
            <td>
              <a href={href(orgId, 'solutions', s.id)}>{s.name}</a>
              <div class="muted small">{s.solutionType}</div>
            </td>
            <td>
              <Status value={s.status} />
            </td>
            <td title={when(s.lastRunTime)}>{ago(s.lastRunTime)}</td>
            <td>{when(s.nextRunTime)}</td>
            <td class="actions">
              <SolutionActions orgId={orgId} s={s} after={loaded.reload} />
            </td>
          </tr>
        ))}
      </Table>
      <Pager offset={offset} total={loaded.data?.total ?? 0} onChange={setOffset} />
    </>
  );
}

/**
 * A run's progress while it runs (POST startmonitor, every second): processed, failed and the
 * rate since it started. Started from this page, it watches that run until the monitor reports
 * it ended (the Agent may answer for the previous run for a moment after the start).
 */
function LiveProgress(props: {
  orgId: number;
  solution: Solution;
  started: { runId: string } | undefined;
  onEnd: () => void;
}): JSX.Element | null {
  const { orgId, solution, onEnd } = props;
  const [m, setM] = useState<Monitor & { rate: number }>();
  const [error, setError] = useState<unknown>();
  const [watching, setWatching] = useState(running(solution));
  useEffect(() => {
    if (props.started) setWatching(true);
  }, [props.started]);
  useEffect(() => {
    if (running(solution)) setWatching(true);
  }, [solution.status]);
  useInterval(
    () => {
      api<Monitor>('POST', `${S(orgId, solution.id)}/startmonitor`).then(
        (next) => {
          setError(undefined);
          const ours = !props.started || next.runId === props.started.runId;
          if (!ours) return;
          setM((prev) => {
            if (!next.running) return { ...next, rate: prev?.rate ?? 0 };
            const secs = next.startedAt ? (Date.now() - Date.parse(next.startedAt)) / 1000 : 0;
            return { ...next, rate: secs > 0 ? next.recordsProcessed / secs : 0 };
          });
          if (!next.running) {
            setWatching(false);
            void api('POST', `${S(orgId, solution.id)}/stopmonitor`).catch(() => undefined);
            onEnd();
          }
        },
        (err: unknown) => setError(err),
      );
    },
    1000,
    watching,
  );
  if (!watching && !m) return null;
  return (
    <Section title="Live progress" id="live">
      <ErrorNote error={error} />
      <dl class="facts" aria-live="polite">
        <dt>State</dt>
        <dd>
          <Status value={m ? (m.running ? 'InProgress' : 'Finished') : 'Starting'} />
        </dd>
        <dt>Processed</dt>
        <dd class="num" data-testid="processed">
          {m?.recordsProcessed ?? 0}
        </dd>
        <dt>Failed</dt>
        <dd class="num" data-testid="failed">
          {m?.recordsFailed ?? 0}
        </dd>
        <dt>Records/s</dt>
        <dd class="num">{m ? m.rate.toFixed(1) : '—'}</dd>
        <dt>Started</dt>
        <dd>{when(m?.startedAt)}</dd>
      </dl>
    </Section>
  );
}

/** The schedule as the API holds it, edited as JSON, with the two common cases a button away. */
function ScheduleEditor({
  orgId,
  solutionId,
  after,
}: {
  orgId: number;
  solutionId: string;
  after: () => void;
}): JSX.Element {
  const loaded = useLoad(() => api<unknown>('GET', `${S(orgId, solutionId)}/schedule`), [orgId, solutionId]);
  const [text, setText] = useState('');
  useEffect(() => {
    if (loaded.data) setText(JSON.stringify(loaded.data, null, 2));
  }, [loaded.data]);
  const everyHour = {
    scheduleOption: 'Recurring',
    recurringOptions: {
      days: { daysOption: 'DaysInterval', daysInterval: 1 },
      times: { timeOption: 'TimeInterval', timeInterval: 1, timeIntervalUnit: 'hours' },
      timeZone: 'UTC',
    },
  };
  return (
    <Section title="Schedule" id="schedule">
      <Loading loaded={loaded} />
      <div class="actions">
        <button type="button" onClick={() => setText(JSON.stringify({ scheduleOption: 'OnDemand' }, null, 2))}>
          On demand
        </button>
        <button type="button" onClick={() => setText(JSON.stringify(everyHour, null, 2))}>
          Every hour
        </button>
      </div>
      <label class="block">
        Schedule model (docs/solutions.md, "Schedules")
        <textarea rows={10} spellcheck={false} value={text} onInput={(e) => setText(e.currentTarget.value)} />
      </label>
      <Action
        label="Save schedule"
        kind="primary"
        run={async () => {
          let body: unknown;
          try {
            body = JSON.parse(text);
          } catch (err) {
            throw new Error(`The schedule is not valid JSON: ${messageOf(err)}`);
          }
          await api('PUT', `${S(orgId, solutionId)}/schedule`, { body });
          loaded.reload();
          after();
        }}
        done="Schedule saved."
      />
    </Section>
  );
}

export function SolutionPage({ orgId, solutionId }: { orgId: number; solutionId: string }): JSX.Element {
  const loaded = useLoad(() => api<Solution>('GET', S(orgId, solutionId)), [orgId, solutionId]);
  useInterval(loaded.reload, 3_000);
  const maps = useLoad(() => page<MapModel>(`${S(orgId, solutionId)}/maps`), [orgId, solutionId]);
  const [started, setStarted] = useState<{ runId: string }>();
  const agentId = loaded.data?.agentId;
  const agent = useLoad(
    async () =>
      agentId ? api<{ name: string; status: string }>('GET', `/v1/orgs/${orgId}/agents/${agentId}`) : undefined,
    [orgId, agentId],
  );
  const s = loaded.data;
  return (
    <>
      <p class="crumbs">
        <a href={href(orgId, 'solutions')}>Solutions</a> /
      </p>
      <h1>{s?.name ?? 'Solution'}</h1>
      <Loading loaded={loaded} />
      {s && (
        <>
          <Section
            title="Status"
            id="status"
            actions={
              <SolutionActions orgId={orgId} s={s} after={loaded.reload} onStarted={(runId) => setStarted({ runId })} />
            }
          >
            <dl class="facts">
              <dt>Status</dt>
              <dd>
                <Status value={s.status} />
              </dd>
              <dt>Type</dt>
              <dd>{s.solutionType}</dd>
              <dt>Last run</dt>
              <dd>{when(s.lastRunTime)}</dd>
              <dt>Next run</dt>
              <dd>{when(s.nextRunTime)}</dd>
              <dt>Agent</dt>
              <dd>
                {agent.data ? (
                  <>
                    <a href={href(orgId, 'agents')}>{agent.data.name}</a> <Status value={agent.data.status} />
                  </>
                ) : (
                  s.agentId
                )}
              </dd>
            </dl>
            <p>
              <a href={href(orgId, 'history', s.id)}>Run history of {s.name} →</a>
            </p>
          </Section>
          <LiveProgress
            orgId={orgId}
            solution={s}
            started={started}
            onEnd={() => {
              loaded.reload();
              notify(`${s.name} finished its run.`);
            }}
          />
          <Section title="Maps" id="maps">
            <Loading loaded={maps} />
            <Table caption="Maps" head={['Map', 'Revision', 'Valid', 'Last run']} empty="No Map.">
              {(maps.data?.items ?? []).map((m) => (
                <tr key={m.id}>
                  <td>
                    <a href={href(orgId, 'solutions', s.id, 'maps', m.id)}>{m.name}</a>
                  </td>
                  <td class="num">{m.revision}</td>
                  <td>{m.valid ? 'yes' : 'no'}</td>
                  <td>{when(m.lastRunDate)}</td>
                </tr>
              ))}
            </Table>
          </Section>
          <ScheduleEditor orgId={orgId} solutionId={s.id} after={loaded.reload} />
        </>
      )}
    </>
  );
}
