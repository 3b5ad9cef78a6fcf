import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api, download, page } from '../api.js';
import { href } from '../router.js';
import type { LookupTable, LookupValue } from '../types.js';
import { Action, Loading, Pager, Section, Table, useLoad, when } from '../util.js';

const L = (orgId: number): string => `/v1/orgs/${orgId}/lookuptables`;

export function LookupTablesPage({ orgId, tableId }: { orgId: number; tableId: string | undefined }): JSX.Element {
  return tableId === undefined ? <TableList orgId={orgId} /> : <TableValues orgId={orgId} tableId={tableId} />;
}

function TableList({ orgId }: { orgId: number }): JSX.Element {
  const [offset, setOffset] = useState(0);
  const loaded = useLoad(() => page<LookupTable>(L(orgId), offset), [orgId, offset]);
  return (
    <>
      <h1>Lookup Tables</h1>
      <Loading loaded={loaded} />
      <Table caption="Lookup Tables" head={['Table', 'Description', 'Modified']} empty="No Lookup Table yet.">
        {(loaded.data?.items ?? []).map((t) => (
          <tr key={t.id}>
            <td>
              <a href={href(orgId, 'lookuptables', t.id)}>{t.name}</a>
            </td>
            <td>{t.description ?? ''}</td>
            <td>{when(t.lastModificationDate)}</td>
          </tr>
        ))}
      </Table>
      <Pager offset={offset} total={loaded.data?.total ?? 0} onChange={setOffset} />
    </>
  );
}

/** A table's values a page at a time, CSV import (added to or replacing the values) and export. */
function TableValues({ orgId, tableId }: { orgId: number; tableId: string }): JSX.Element {
  const T = `${L(orgId)}/${tableId}`;
  const table = useLoad(() => api<LookupTable>('GET', T), [T]);
  const [offset, setOffset] = useState(0);
  const values = useLoad(() => page<LookupValue>(`${T}/values`, offset), [T, offset]);
  const [csv, setCsv] = useState('');
  const [header, setHeader] = useState(true);
  const [replace, setReplace] = useState(false);
  const exportCsv = async (): Promise<void> => {
    const { exportId } = await api<{ exportId: number | string }>('GET', `${T}/export`);
    download(await api<Blob>('GET', `${T}/export/${exportId}`, { as: 'blob' }), `${table.data?.name ?? tableId}.csv`);
  };
  const readFile = async (e: Event): Promise<void> => {
    const file = (e.currentTarget as HTMLInputElement).files?.[0];
    if (file) setCsv(await file.text());
  };
  return (
    <>
      <p class="crumbs">
        <a href={href(orgId, 'lookuptables')}>Lookup Tables</a> /
      </p>
      <h1>{table.data?.name ?? 'Lookup Table'}</h1>
      <Loading loaded={table} />
      <Section title="Values" id="values" actions={<Action label="Export CSV" run={exportCsv} />}>
        <Loading loaded={values} />
        <Table caption="Values" head={['Value 1', 'Value 2']} empty="No value.">
          {(values.data?.items ?? []).map((v) => (
            <tr key={v.id}>
              <td>{v.value1}</td>
              <td>{v.value2}</td>
            </tr>
          ))}
        </Table>
        <Pager offset={offset} total={values.data?.total ?? 0} onChange={setOffset} />
      </Section>
      <Section title="Import CSV" id="import">
        <label class="block">
          A CSV file <input type="file" accept=".csv,text/csv" onChange={(e) => void readFile(e)} />
        </label>
        <label class="block">
          or its text (value1,value2 per line)
          <textarea class="code" rows={6} value={csv} onInput={(e) => setCsv(e.currentTarget.value)} />
        </label>
        <label class="inline">
          <input type="checkbox" checked={header} onChange={(e) => setHeader(e.currentTarget.checked)} /> The first line
          is a header
        </label>
        <label class="inline">
          <input type="checkbox" checked={replace} onChange={(e) => setReplace(e.currentTarget.checked)} /> Replace the
          values
        </label>
        <Action
          label="Import"
          kind="primary"
          disabled={!csv}
          run={async () => {
            const a = await api<{ valuesImported: number; valueCount: number }>('POST', `${T}/import`, {
              body: { commaSeparatedValues: csv, hasHeaderRow: header },
              query: { replace },
            });
            values.reload();
            return a;
          }}
          done={(a) => {
            const r = a as { valuesImported: number; valueCount: number };
            return `${r.valuesImported} value(s) imported; the table has ${r.valueCount}.`;
          }}
        />
      </Section>
    </>
  );
}
