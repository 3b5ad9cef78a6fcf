import type { JSX } from 'preact';
import { api, page } from '../api.js';
import { href } from '../router.js';
import type { Agent, Execution, Solution } from '../types.js';
import { ago, countBy, Loading, Section, Status, Table, useInterval, useLoad, when } from '../util.js';

const DAY_MS = 24 * 3600 * 1000;
const NEEDS_ACTION = /LastRunFailed|LastRunRowErrors|ProvisionError|Agent(Shutdown|HeartbeatFailed)/;

interface RecentRun extends Execution {
  solutionName: string;
}

/**
 * Overview: the first page of Agents and of Solutions by status, the runs of the last 24 hours of
 * the Solutions that ran in them, and what needs an operator.
 */
async function loadOverview(orgId: number) {
  const O = `/v1/orgs/${orgId}`;
  const [agents, solutions] = await Promise.all([page<Agent>(`${O}/agents`), page<Solution>(`${O}/solutions`)]);
  const since = new Date(Date.now() - DAY_MS).toISOString();
  // Only the Solutions whose last run started in the last 24 hours have runs to count.
  const recent = solutions.items.filter((s) => s.lastRunTime && Date.parse(s.lastRunTime) >= Date.now() - DAY_MS);
  const runs: RecentRun[] = (
    await Promise.all(
      recent.map(async (s) => {
        const list = await api<Execution[]>('GET', `${O}/solutions/${s.id}/history`, {
          query: { laterThanDate: since, limit: 100, sortOrder: 'desc' },
        });
        return list.map((e) => ({ ...e, solutionName: s.name }));
      }),
    )
  ).flat();
  runs.sort((a, b) => Date.parse(b.start) - Date.parse(a.start));
  return { agents, solutions, runs };
}

export function OverviewPage({ orgId }: { orgId: number }): JSX.Element {
  const loaded = useLoad(() => loadOverview(orgId), [orgId]);
  useInterval(loaded.reload, 10_000);
  const d = loaded.data;
  return (
    <>
      <h1>Overview</h1>
      <Loading loaded={loaded} />
      {d && (
        <>
          <div class="tiles">
            <Tile
              title="Agents"
              total={d.agents.total}
              counts={countBy(d.agents.items, (a) => a.status)}
              link={href(orgId, 'agents')}
            />
            <Tile
              title="Solutions"
              total={d.solutions.total}
              counts={countBy(d.solutions.items, (s) => s.status)}
              link={href(orgId, 'solutions')}
            />
            <Tile title="Runs, last 24 h" total={d.runs.length} counts={countBy(d.runs, (r) => r.result)} />
          </div>
          <Attention orgId={orgId} agents={d.agents.items} solutions={d.solutions.items} runs={d.runs} />
          <Section title="Runs of the last 24 hours" id="recent-runs">
            <Table
              caption="Runs of the last 24 hours"
              head={['Solution', 'Started', 'Result', 'Processed', 'Failed']}
              empty="No run in the last 24 hours."
            >
              {d.runs.slice(0, 100).map((r) => (
                <tr key={`${r.solutionId}-${r.id}`}>
                  <td>
                    <a href={href(orgId, 'history', r.solutionId, r.id)}>{r.solutionName}</a>
                  </td>
                  <td>{when(r.start)}</td>
                  <td>
                    <Status value={r.result} />
                  </td>
                  <td class="num">{r.recordsProcessed}</td>
                  <td class="num">{r.recordsFailed}</td>
                </tr>
              ))}
            </Table>
          </Section>
        </>
      )}
    </>
  );
}

function Tile(props: { title: string; total: number; counts: Array<[string, number]>; link?: string }): JSX.Element {
  return (
    <section class="tile card" aria-label={props.title}>
      <h2>{props.link ? <a href={props.link}>{props.title}</a> : props.title}</h2>
      <p class="big">{props.total}</p>
      <ul class="counts">
        {props.counts.map(([k, n]) => (
          <li key={k}>
            <Status value={k} /> <span class="num">{n}</span>
          </li>
        ))}
      </ul>
    </section>
  );
}

function Attention(props: { orgId: number; agents: Agent[]; solutions: Solution[]; runs: RecentRun[] }): JSX.Element {
  const { orgId } = props;
  const agents = props.agents.filter(
    (a) => !a.isCloudAgent && /HeartbeatFailed|HeartbeatLate|Shutdown|Obsolete|Unknown/.test(a.status),
  );
  const solutions = props.solutions.filter((s) => NEEDS_ACTION.test(s.status));
  const reprocess = props.runs.filter((r) => r.reprocessRecordsRemaining > 0);
  const none = agents.length + solutions.length + reprocess.length === 0;
  return (
    <Section title="Needs action" id="needs-action">
      {none ? (
        <p class="muted">Nothing needs action.</p>
      ) : (
        <ul class="attention">
          {agents.map((a) => (
            <li key={a.id}>
              Agent <a href={href(orgId, 'agents')}>{a.name}</a> is <Status value={a.status} /> (last contact{' '}
              {ago(a.lastContactTime)})
            </li>
          ))}
          {solutions.map((s) => (
            <li key={s.id}>
              Solution <a href={href(orgId, 'solutions', s.id)}>{s.name}</a> is <Status value={s.status} />
            </li>
          ))}
          {reprocess.map((r) => (
            <li key={`${r.solutionId}-${r.id}`}>
              <a href={href(orgId, 'history', r.solutionId, r.id)}>
                {r.solutionName}, run {r.id}
              </a>
              : {r.reprocessRecordsRemaining} failed record{r.reprocessRecordsRemaining === 1 ? '' : 's'} to reprocess
            </li>
          ))}
        </ul>
      )}
    </Section>
  );
}
