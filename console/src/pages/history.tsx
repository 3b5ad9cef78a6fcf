import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api, ApiError, download, page } from '../api.js';
import { go, href } from '../router.js';
import type { Execution, FailedRecord, MapStatistic, RecordError, Solution } from '../types.js';
import {
  Action,
  ErrorNote,
  field,
  FormSelect,
  Loading,
  Pager,
  Section,
  Status,
  Table,
  useInterval,
  useLoad,
  when,
} from '../util.js';

const RESULTS = [
  '',
  'CompletedSuccessfully',
  'CompletedWithErrors',
  'FatalError',
  'RecordErrorsAndFatalErrors',
  'InProgress',
];
const H = (orgId: number, solutionId: string): string => `/v1/orgs/${orgId}/solutions/${solutionId}/history`;

/** Run history: a Solution's executions, filtered by result and start date, newest first. */
export function HistoryPage(props: {
  orgId: number;
  solutionId: string | undefined;
  query: URLSearchParams;
}): JSX.Element {
  const { orgId, solutionId, query } = props;
  const solutions = useLoad(() => page<Solution>(`/v1/orgs/${orgId}/solutions`), [orgId]);
  const result = query.get('result') ?? '';
  const since = query.get('since') ?? '';
  const [offset, setOffset] = useState(0);
  const runs = useLoad(
    async () =>
      solutionId
        ? page<Execution>(H(orgId, solutionId), offset, {
            result,
            // A date alone means its start, in the reader's time zone.
            laterThanDate: since ? new Date(`${since}T00:00:00`).toISOString() : undefined,
            sortOrder: 'desc',
          })
        : undefined,
    [orgId, solutionId, result, since, offset],
  );
  useInterval(runs.reload, 5_000, solutionId !== undefined);
  const filter = (e: Event): void => {
    e.preventDefault();
    const f = new FormData(e.currentTarget as HTMLFormElement);
    setOffset(0);
    const sol = field(f, 'solution');
    go(href(orgId, 'history', ...(sol ? [sol] : [])), {
      result: field(f, 'result'),
      since: field(f, 'since'),
    });
  };
  const name = solutions.data?.items.find((s) => s.id === solutionId)?.name;
  return (
    <>
      <h1>Run history{name ? `: ${name}` : ''}</h1>
      <form class="filters" onSubmit={filter} role="search">
        <label>
          Solution
          <FormSelect
            name="solution"
            initial={solutionId ?? ''}
            required
            options={[['', 'choose…'], ...(solutions.data?.items ?? []).map((x): [string, string] => [x.id, x.name])]}
          />
        </label>
        <label>
          Result
          <FormSelect name="result" initial={result} options={RESULTS.map((r): [string, string] => [r, r || 'any'])} />
        </label>
        <label>
          Since <input type="date" name="since" defaultValue={since} />
        </label>
        <button type="submit">Show</button>
      </form>
      {!solutionId && <p class="muted">Choose a Solution to see its runs (the last 45 days unless a date is given).</p>}
      <Loading loaded={runs} />
      {solutionId && runs.data && (
        <>
          <Table
            caption="Executions"
            head={['Run', 'Started', 'Duration', 'Result', 'Processed', 'Failed', 'To reprocess']}
            empty="No execution matches."
          >
            {runs.data.items.map((e) => (
              <tr key={e.id}>
                <td>
                  <a href={href(orgId, 'history', solutionId, e.id)}>
                    #{e.id}
                    {e.isReprocessJob ? ' (reprocess)' : ''}
                  </a>
                </td>
                <td>{when(e.start)}</td>
                <td>{seconds(e.duration)}</td>
                <td>
                  <Status value={e.result} />
                </td>
                <td class="num">{e.recordsProcessed}</td>
                <td class="num">{e.recordsFailed}</td>
                <td class="num">{e.reprocessRecordsRemaining}</td>
              </tr>
            ))}
          </Table>
          <Pager offset={offset} total={runs.data.total} onChange={setOffset} />
        </>
      )}
    </>
  );
}

/** One execution: its statistics per Map, its record errors with their records, marks, reprocessing, CSV export. */
export function ExecutionPage(props: { orgId: number; solutionId: string; executionId: number }): JSX.Element {
  const { orgId, solutionId, executionId } = props;
  const E = `${H(orgId, solutionId)}/${executionId}`;
  const exec = useLoad(() => api<Execution>('GET', E), [E]);
  const stats = useLoad(() => api<{ mapStatistics: MapStatistic[] }>('GET', `${E}/statistics`), [E]);
  const [offset, setOffset] = useState(0);
  const errors = useLoad(() => page<RecordError>(`${E}/errors`, offset), [E, offset]);
  const [open, setOpen] = useState<string>();
  useInterval(exec.reload, 3_000, exec.data?.result === 'InProgress');
  const e = exec.data;
  const reloadAll = (): void => {
    exec.reload();
    errors.reload();
  };
  const reprocess = async (): Promise<{
    started: boolean;
    records: number;
    message?: string | null;
    historyId?: number;
  }> => api('POST', `${E}/${executionId}/reprocess`);
  const reprocessed = (a: unknown): string => {
    const answer = a as { started: boolean; records: number; message?: string | null };
    reloadAll();
    return answer.started
      ? `Reprocessing ${answer.records} record${answer.records === 1 ? '' : 's'} as a new run.`
      : `Not reprocessed: ${answer.message ?? 'nothing marked'}`;
  };
  const exportCsv = async (): Promise<void> => {
    const { exportId } = await api<{ exportId: number }>('POST', `${E}/export`);
    download(await api<Blob>('GET', `${E}/export/${exportId}`, { as: 'blob' }), `run-${executionId}-errors.csv`);
  };
  return (
    <>
      <p class="crumbs">
        <a href={href(orgId, 'history', solutionId)}>Run history</a> /
      </p>
      <h1>Run #{executionId}</h1>
      <Loading loaded={exec} />
      {e && (
        <Section title="Execution" id="execution">
          <dl class="facts">
            <dt>Result</dt>
            <dd>
              <Status value={e.result} />
            </dd>
            <dt>Started</dt>
            <dd>{when(e.start)}</dd>
            <dt>Ended</dt>
            <dd>{when(e.stop)}</dd>
            <dt>Processed</dt>
            <dd class="num">{e.recordsProcessed}</dd>
            <dt>Failed</dt>
            <dd class="num">{e.recordsFailed}</dd>
            <dt>To reprocess</dt>
            <dd class="num" data-testid="remaining">
              {e.reprocessRecordsRemaining}
            </dd>
            <dt>Trigger</dt>
            <dd>{e.isReprocessJob ? 'reprocess' : (e.trigger ?? '—')}</dd>
          </dl>
          {e.details && <p class="details">{e.details}</p>}
        </Section>
      )}
      <Section title="Statistics per Map" id="statistics">
        <Loading loaded={stats} />
        <Table
          caption="Statistics per Map"
          head={['Map', 'Processed', 'Failed', 'Average ms', 'Total time', 'Fatal error']}
          empty="No statistics (yet)."
        >
          {(stats.data?.mapStatistics ?? []).map((m, i) => (
            <tr key={`${m.mapId ?? m.entityName ?? ''}-${i}`}>
              <td>{m.mapName || m.entityName}</td>
              <td class="num">{m.recordsProcessed}</td>
              <td class="num">{m.recordsFailed}</td>
              <td class="num">{m.average.toFixed(1)}</td>
              <td>{m.totalTimeFormatted}</td>
              <td>{m.fatalError ?? ''}</td>
            </tr>
          ))}
        </Table>
      </Section>
      <Section
        title="Record errors"
        id="record-errors"
        actions={
          <>
            <Action
              label="Mark all"
              run={() => api('POST', `${E}/mark`, { query: { mark: true } }).finally(reloadAll)}
            />
            <Action
              label="Unmark all"
              run={() => api('POST', `${E}/mark`, { query: { mark: false } }).finally(reloadAll)}
            />
            <Action label="Reprocess Selected" kind="primary" run={reprocess} done={reprocessed} />
            <Action
              label="Reprocess All"
              run={async () => {
                await api('POST', `${E}/mark`, { query: { mark: true } });
                return reprocess();
              }}
              done={reprocessed}
            />
            <Action label="Export CSV" run={exportCsv} />
          </>
        }
      >
        <Loading loaded={errors} />
        <Table caption="Record errors" head={['Selected', 'Map', 'Key', 'Error', '']} empty="No record error.">
          {(errors.data?.items ?? []).flatMap((r) => [
            <tr key={r.id} data-error={r.id}>
              <td>
                <input
                  type="checkbox"
                  checked={r.marked}
                  disabled={!r.canReprocess}
                  aria-label={`Select the error of ${keyText(r)} for reprocessing`}
                  onChange={(ev) =>
                    void api('POST', `${E}/errors/${r.id}/mark`, { query: { mark: ev.currentTarget.checked } }).finally(
                      reloadAll,
                    )
                  }
                />
              </td>
              <td>{r.mapName}</td>
              <td>{keyText(r)}</td>
              <td>{r.errorMessage}</td>
              <td>
                <button
                  type="button"
                  aria-expanded={open === r.id}
                  onClick={() => setOpen(open === r.id ? undefined : r.id)}
                >
                  {open === r.id ? 'Close' : 'Open'}
                </button>
              </td>
            </tr>,
            open === r.id ? (
              <tr key={`${r.id}-detail`} class="detail-row">
                <td colSpan={5}>
                  <ErrorDetail orgId={orgId} solutionId={solutionId} executionId={executionId} error={r} />
                </td>
              </tr>
            ) : null,
          ])}
        </Table>
        <Pager offset={offset} total={errors.data?.total ?? 0} onChange={setOffset} />
      </Section>
    </>
  );
}

/** A duration the API gives in seconds, with its unit. */
function seconds(d: number | null): string {
  return d === null ? '—' : `${d < 10 ? d.toFixed(2) : Math.round(d)} s`;
}

function keyText(r: RecordError): string {
  if (r.sourceKey)
    return Object.entries(r.sourceKey)
      .map(([k, v]) => `${k}=${String(v)}`)
      .join(', ');
  return r.sourceRow === null ? '—' : `row ${r.sourceRow}`;
}

/** One record error: what failed and where, and the failed record's values when the Service keeps them. */
function ErrorDetail(props: {
  orgId: number;
  solutionId: string;
  executionId: number;
  error: RecordError;
}): JSX.Element {
  const { error: r } = props;
  const record = useLoad(async () => {
    try {
      return await api<FailedRecord>(
        'GET',
        `${H(props.orgId, props.solutionId)}/${props.executionId}/failedrecords/${r.id}`,
      );
    } catch (err) {
      // Kept on the Agent (isSourceDataLocal): the Service has the key only.
      if (err instanceof ApiError && (err.status === 409 || err.status === 404)) return err;
      throw err;
    }
  }, [r.id]);
  return (
    <div class="error-detail">
      <dl class="facts">
        <dt>Message</dt>
        <dd>{r.errorMessage}</dd>
        {r.errorDetail && (
          <>
            <dt>Detail</dt>
            <dd>{r.errorDetail}</dd>
          </>
        )}
        <dt>Block</dt>
        <dd>{r.blockName ?? '—'}</dd>
        <dt>Code</dt>
        <dd>{r.code ?? '—'}</dd>
        <dt>Entity</dt>
        <dd>{r.sourceEntity}</dd>
        <dt>Key</dt>
        <dd>{keyText(r)}</dd>
        <dt>Can reprocess</dt>
        <dd>{r.canReprocess ? 'yes' : 'no'}</dd>
      </dl>
      <h3>Failed record</h3>
      <Loading loaded={record} />
      {record.data instanceof ApiError ? (
        <p class="muted">{record.data.message}</p>
      ) : record.data ? (
        <Table caption="Failed record values" head={['Field', 'Value']}>
          {Object.entries(record.data.sourceData).map(([k, v]) => (
            <tr key={k}>
              <th scope="row">{k}</th>
              <td>
                <code>{JSON.stringify(v)}</code>
              </td>
            </tr>
          ))}
        </Table>
      ) : null}
      <ErrorNote error={record.error} />
    </div>
  );
}
