import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api, page } from '../api.js';
import type { Endpoint } from '../types.js';
import { Action, Loading, Pager, Table, useInterval, useLoad, when } from '../util.js';

/** The Message Endpoints of Event Solutions: queue depth, and clearing a queue. */
export function EndpointsPage({ orgId }: { orgId: number }): JSX.Element {
  const [offset, setOffset] = useState(0);
  const loaded = useLoad(() => page<Endpoint>(`/v1/orgs/${orgId}/endpoints`, offset), [orgId, offset]);
  useInterval(loaded.reload, 5_000);
  return (
    <>
      <h1>Message Endpoints</h1>
      <Loading loaded={loaded} />
      <Table
        caption="Message Endpoints"
        head={['Map', 'Entity', 'Messages queued', 'Last change', '']}
        empty="No Message Endpoint (Event Solutions have them)."
      >
        {(loaded.data?.items ?? []).map((e) => (
          <tr key={e.id}>
            <td>
              {e.mapName}
              {e.mapDescription && <div class="muted small">{e.mapDescription}</div>}
            </td>
            <td>{e.entityName}</td>
            <td class="num">{e.messageCount}</td>
            <td>{when(e.lastModificationDate)}</td>
            <td>
              <Action
                label="Clear queue"
                kind="danger"
                disabled={e.messageCount === 0}
                confirm={`Delete the ${e.messageCount} message(s) queued for ${e.mapName}?`}
                run={() => api('PUT', `/v1/orgs/${orgId}/endpoints/${e.id}/clear`).finally(loaded.reload)}
                done={`The queue of ${e.mapName} is empty.`}
              />
            </td>
          </tr>
        ))}
      </Table>
      <Pager offset={offset} total={loaded.data?.total ?? 0} onChange={setOffset} />
    </>
  );
}
