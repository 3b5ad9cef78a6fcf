import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api, page, poll } from '../api.js';
import { href } from '../router.js';
import type { Agent, Connection, Field } from '../types.js';
import { Action, Loading, Pager, Section, Table, useLoad, when } from '../util.js';

const C = (orgId: number): string => `/v1/orgs/${orgId}/connections`;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface TestStatus {
  status: 'Requested' | 'Completed';
  reply: string | null;
}

/** Tests the Connection on `agentId` and waits for the Agent's answer (SUCCESS or the error). */
async function testConnection(orgId: number, c: Connection, agentId: string): Promise<string> {
  const { commandId } = await api<{ commandId: string }>('POST', `${C(orgId)}/${c.id}/test`, { query: { agentId } });
  const deadline = Date.now() + 120_000;
  for (;;) {
    const s = await api<TestStatus>('GET', `${C(orgId)}/test/${encodeURIComponent(commandId)}`);
    if (s.status === 'Completed') {
      if (s.reply === 'SUCCESS') return `${c.name}: the test succeeded.`;
      throw new Error(`${c.name}: ${s.reply ?? 'the test failed'}`);
    }
    if (Date.now() > deadline) throw new Error(`${c.name}: the Agent has not answered the test within 2 minutes.`);
    await sleep(1000);
  }
}

export function ConnectionsPage({
  orgId,
  connectionId,
}: {
  orgId: number;
  connectionId: string | undefined;
}): JSX.Element {
  return connectionId ? (
    <ConnectionMetadata orgId={orgId} connectionId={connectionId} />
  ) : (
    <ConnectionList orgId={orgId} />
  );
}

function ConnectionList({ orgId }: { orgId: number }): JSX.Element {
  const [offset, setOffset] = useState(0);
  const loaded = useLoad(() => page<Connection>(C(orgId), offset), [orgId, offset]);
  const agents = useLoad(() => page<Agent>(`/v1/orgs/${orgId}/agents`), [orgId]);
  const [agentId, setAgentId] = useState('');
  const chosen = agentId || agents.data?.items[0]?.id || '';
  return (
    <>
      <h1>Connections</h1>
      <label class="inline">
        Test on Agent
        <select value={chosen} onChange={(e) => setAgentId(e.currentTarget.value)}>
          {(agents.data?.items ?? []).map((a) => (
            <option key={a.id} value={a.id}>
              {a.name} ({a.status})
            </option>
          ))}
        </select>
      </label>
      <Loading loaded={loaded} />
      <Table caption="Connections" head={['Connection', 'Connector', 'Modified', 'Actions']} empty="No Connection yet.">
        {(loaded.data?.items ?? []).map((c) => (
          <tr key={c.id}>
            <td>
              <a href={href(orgId, 'connections', c.id)}>{c.name}</a>
              <div class="muted small">{c.alias}</div>
            </td>
            <td>{c.connectorType}</td>
            <td>{when(c.lastModificationDateTime)}</td>
            <td class="actions">
              <Action
                label="Test"
                disabled={!chosen}
                run={() => testConnection(orgId, c, chosen)}
                done={(m) => String(m)}
              />
              <a class="button" href={href(orgId, 'connections', c.id)}>
                Browse metadata
              </a>
            </td>
          </tr>
        ))}
      </Table>
      <Pager offset={offset} total={loaded.data?.total ?? 0} onChange={setOffset} />
    </>
  );
}

/** The Connection's entities (a page at a time) and the fields of the one chosen, loaded by an Agent. */
function ConnectionMetadata({ orgId, connectionId }: { orgId: number; connectionId: string }): JSX.Element {
  const base = `${C(orgId)}/${connectionId}`;
  const conn = useLoad(() => api<Connection>('GET', base), [base]);
  const [offset, setOffset] = useState(0);
  const names = useLoad(() => poll(() => page<string>(`${base}/entitynames`, offset)), [base, offset]);
  const [entity, setEntity] = useState<string>();
  const fields = useLoad(
    async () =>
      entity ? poll(() => api<Field[]>('GET', `${base}/entities/${encodeURIComponent(entity)}/fields`)) : undefined,
    [base, entity],
  );
  return (
    <>
      <p class="crumbs">
        <a href={href(orgId, 'connections')}>Connections</a> /
      </p>
      <h1>{conn.data?.name ?? 'Connection'}: metadata</h1>
      <div class="split">
        <Section
          title="Entities"
          id="entities"
          actions={<Action label="Reload metadata" run={() => api('POST', `${base}/reset`).then(names.reload)} />}
        >
          <Loading loaded={names} />
          <ul class="pick-list">
            {(names.data?.items ?? []).map((n) => (
              <li key={n}>
                <button type="button" class="link" aria-pressed={entity === n} onClick={() => setEntity(n)}>
                  {n}
                </button>
              </li>
            ))}
          </ul>
          <Pager offset={offset} total={names.data?.total ?? 0} onChange={setOffset} />
        </Section>
        <Section title={entity ? `Fields of ${entity}` : 'Fields'} id="fields">
          {!entity && <p class="muted">Choose an entity.</p>}
          {entity && <Loading loaded={fields} />}
          {entity && fields.data && (
            <Table caption={`Fields of ${entity}`} head={['Field', 'Type', 'Key', 'Nullable']}>
              {fields.data.map((f) => (
                <tr key={f.name}>
                  <td>{f.name}</td>
                  <td>{f.propertyType || f.nativeType || f.presentationType || ''}</td>
                  <td>{f.isPrimaryKey ? 'key' : ''}</td>
                  <td>{f.nullable ? 'yes' : 'no'}</td>
                </tr>
              ))}
            </Table>
          )}
        </Section>
      </div>
    </>
  );
}
