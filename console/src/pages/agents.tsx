import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api, ApiError, download, page } from '../api.js';
import type { Agent } from '../types.js';
import { Action, ago, Loading, Pager, Status, Table, useInterval, useLoad, when } from '../util.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Asks the Agent for its logs and downloads the zip once it is uploaded: the Service answers
 * AGT_LOGS_NOT_AVAILABLE until then (SPEC.md "Logs").
 */
async function fetchLogs(orgId: number, agent: Agent, progress: (text: string) => void): Promise<void> {
  const A = `/v1/orgs/${orgId}/agents/${agent.id}`;
  const { logId } = await api<{ logId: string }>('POST', `${A}/logs`);
  progress('waiting for the Agent to upload its logs…');
  const deadline = Date.now() + 5 * 60_000;
  for (;;) {
    try {
      const zip = await api<Blob>('GET', `${A}/logs/${encodeURIComponent(logId)}`, { as: 'blob' });
      download(zip, `${agent.name}-logs.zip`);
      progress('downloaded');
      return;
    } catch (err) {
      if (!(err instanceof ApiError && err.code === 'AGT_LOGS_NOT_AVAILABLE') || Date.now() > deadline) throw err;
      await sleep(2000);
    }
  }
}

export function AgentsPage({ orgId }: { orgId: number }): JSX.Element {
  const [offset, setOffset] = useState(0);
  const loaded = useLoad(() => page<Agent>(`/v1/orgs/${orgId}/agents`, offset), [orgId, offset]);
  useInterval(loaded.reload, 5_000);
  // The Connectors' names, for the installed ones (an Organization has a few dozen at most).
  const names = useLoad(
    async () =>
      new Map(
        (await page<{ id: string; name: string }>(`/v1/orgs/${orgId}/connectors`)).items.map((c) => [c.id, c.name]),
      ),
    [orgId],
  );
  const [logState, setLogState] = useState<Record<string, string>>({});
  const agents = loaded.data?.items ?? [];
  return (
    <>
      <h1>Agents</h1>
      <Loading loaded={loaded} />
      <Table
        caption="Agents"
        head={['Agent', 'Status', 'Last contact', 'Version', 'Connectors', 'Actions']}
        empty="No Agent yet."
      >
        {agents.map((a) => (
          <tr key={a.id} data-agent={a.id}>
            <td>
              <strong>{a.name}</strong>
              <div class="muted small">
                {a.isCloudAgent ? 'Cloud Agent' : a.machineName || 'On-premise'} · {a.serviceName}
              </div>
            </td>
            <td>
              <Status value={a.status} />
              {!a.isConnected && <div class="muted small">not connected</div>}
            </td>
            <td title={when(a.lastContactTime)}>{ago(a.lastContactTime)}</td>
            <td>{a.version ?? '—'}</td>
            <td>
              <details>
                <summary>{a.installedConnectors.length} installed</summary>
                <ul class="plain-list small">
                  {a.installedConnectors.map((c) => (
                    <li key={c.connectorId}>
                      {names.data?.get(c.connectorId) ?? c.connectorId} <span class="muted">{c.version}</span>
                    </li>
                  ))}
                </ul>
              </details>
            </td>
            <td class="actions">
              <Action
                label="Restart after work"
                title="Restarts once the running Solutions have finished; due Solutions wait"
                run={() => api('POST', `/v1/orgs/${orgId}/agents/${a.id}/restart`, { query: { restartNow: false } })}
                done={`${a.name} restarts after its running Solutions finish.`}
              />
              <Action
                label="Restart now"
                kind="danger"
                confirm={`Restart ${a.name} now? Running Solutions are interrupted.`}
                run={() => api('POST', `/v1/orgs/${orgId}/agents/${a.id}/restart`, { query: { restartNow: true } })}
                done={`${a.name} is restarting.`}
              />
              <Action
                label="Download logs"
                disabled={a.isCloudAgent}
                title={a.isCloudAgent ? 'A Cloud Agent keeps its logs per Solution' : undefined}
                run={() => fetchLogs(orgId, a, (t) => setLogState((s) => ({ ...s, [a.id]: t })))}
              />
              {logState[a.id] && <div class="muted small">Logs: {logState[a.id]}</div>}
            </td>
          </tr>
        ))}
      </Table>
      <Pager offset={offset} total={loaded.data?.total ?? 0} onChange={setOffset} />
    </>
  );
}
