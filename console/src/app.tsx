import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, signOut, whenSignedOut, type Me } from './api.js';
import { AgentsPage } from './pages/agents.js';
import { ConnectionsPage } from './pages/connections.js';
import { EndpointsPage } from './pages/endpoints.js';
import { ExecutionPage, HistoryPage } from './pages/history.js';
import { LookupTablesPage } from './pages/lookup-tables.js';
import { MapPage } from './pages/maps.js';
import { OverviewPage } from './pages/overview.js';
import { SignIn } from './pages/sign-in.js';
import { SolutionPage, SolutionsPage } from './pages/solutions.js';
import { go, href, useRoute, type Route } from './router.js';
import type { Org } from './types.js';
import { ErrorNote, messageOf, Notices, notify } from './util.js';

const NAV: Array<[string, string]> = [
  ['', 'Overview'],
  ['agents', 'Agents'],
  ['solutions', 'Solutions'],
  ['history', 'Run history'],
  ['connections', 'Connections'],
  ['lookuptables', 'Lookup Tables'],
  ['endpoints', 'Message Endpoints'],
];

type Session = { state: 'checking' } | { state: 'out' } | { state: 'in'; me: Me; orgs: Org[] };

export function App(): JSX.Element {
  const [session, setSession] = useState<Session>({ state: 'checking' });
  const [error, setError] = useState<unknown>();
  const route = useRoute();

  const enter = async (): Promise<void> => {
    try {
      const me = await api<Me>('GET', '/v1/users');
      const orgs = await api<Org[]>('GET', '/v1/orgs', { query: { limit: 100 } });
      setSession({ state: 'in', me, orgs });
      setError(undefined);
    } catch (err) {
      setSession({ state: 'out' });
      // A 401 is simply "not signed in"; anything else is worth saying.
      if (!(err instanceof ApiError && err.status === 401)) setError(err);
    }
  };
  useEffect(() => {
    whenSignedOut(() => setSession({ state: 'out' }));
    void enter();
  }, []);
  // A new page starts at its top, as a page loaded from the server would.
  const path = `${route.orgId ?? ''}/${route.parts.join('/')}`;
  useEffect(() => window.scrollTo(0, 0), [path]);

  if (session.state === 'checking') return <p class="muted center">Loading…</p>;
  if (session.state === 'out') {
    return (
      <>
        <Notices />
        <ErrorNote error={error} />
        <SignIn onSignedIn={() => void enter()} />
      </>
    );
  }
  const orgId = route.orgId ?? session.orgs[0]?.id;
  if (orgId === undefined) return <p class="center">You are not a member of any Organization.</p>;
  if (route.orgId === undefined) {
    go(href(orgId));
    return <p class="muted center">Loading…</p>;
  }
  const leave = async (): Promise<void> => {
    try {
      await signOut();
    } catch (err) {
      notify(messageOf(err), 'error');
    }
    setSession({ state: 'out' });
    location.hash = '';
  };
  const section = route.parts[0] ?? '';
  return (
    <div class="shell">
      {/* Not a fragment link: the fragment holds the page's route. */}
      <button type="button" class="skip" onClick={() => document.getElementById('main')?.focus()}>
        Skip to content
      </button>
      <header class="top">
        <a class="brand" href={href(orgId)}>
          Ferry
        </a>
        <label class="org">
          <span class="visually-hidden">Organization</span>
          <select value={orgId} onChange={(e) => go(href(Number(e.currentTarget.value)))}>
            {session.orgs.map((o) => (
              <option key={o.id} value={o.id}>
                {o.name} ({o.id})
              </option>
            ))}
          </select>
        </label>
        <span class="me">{session.me.email}</span>
        <button type="button" class="plain" onClick={() => void leave()}>
          Sign out
        </button>
      </header>
      <nav class="side" aria-label="Pages">
        <ul>
          {NAV.map(([key, label]) => (
            <li key={key}>
              <a href={href(orgId, ...(key ? [key] : []))} aria-current={section === key ? 'page' : undefined}>
                {label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <Notices />
      <main id="main" tabIndex={-1}>
        <Page route={{ ...route, orgId }} orgId={orgId} />
      </main>
    </div>
  );
}

function Page({ route, orgId }: { route: Route; orgId: number }): JSX.Element {
  const [section, id, sub, subId] = route.parts;
  switch (section) {
    case undefined:
      return <OverviewPage orgId={orgId} />;
    case 'agents':
      return <AgentsPage orgId={orgId} />;
    case 'solutions':
      if (id && sub === 'maps' && subId) return <MapPage orgId={orgId} solutionId={id} mapId={Number(subId)} />;
      if (id) return <SolutionPage orgId={orgId} solutionId={id} />;
      return <SolutionsPage orgId={orgId} query={route.query} />;
    case 'history':
      if (id && sub) return <ExecutionPage orgId={orgId} solutionId={id} executionId={Number(sub)} />;
      return <HistoryPage orgId={orgId} solutionId={id} query={route.query} />;
    case 'connections':
      return <ConnectionsPage orgId={orgId} connectionId={id} />;
    case 'lookuptables':
      return <LookupTablesPage orgId={orgId} tableId={id} />;
    case 'endpoints':
      return <EndpointsPage orgId={orgId} />;
    default:
      return <p>There is no page {route.parts.join('/')}.</p>;
  }
}
