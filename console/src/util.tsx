import type { ComponentChildren, JSX } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, PAGE_SIZE } from './api.js';

/** A date and time in the reader's locale, or a dash. */
export function when(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

/** How long ago, in words a person reads at a glance ("3 min ago"). */
export function ago(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return 'never';
  const s = Math.round((now - Date.parse(iso)) / 1000);
  if (!Number.isFinite(s)) return iso;
  if (s < 0) return `in ${span(-s)}`;
  return `${span(s)} ago`;
}

function span(s: number): string {
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.round(s / 60)} min`;
  if (s < 86_400) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86_400)} d`;
}

export function messageOf(err: unknown): string {
  if (err instanceof ApiError) return err.code ? `${err.message} (${err.code})` : err.message;
  return err instanceof Error ? err.message : String(err);
}

// ── notices ─────────────────────────────────────────────────────────────────────

export interface Notice {
  id: number;
  kind: 'ok' | 'error';
  text: string;
}
let noticeId = 0;
const listeners = new Set<(n: Notice) => void>();

/** Shows a short message at the top of the page (announced to screen readers). */
export function notify(text: string, kind: Notice['kind'] = 'ok'): void {
  const n = { id: ++noticeId, kind, text };
  for (const l of listeners) l(n);
}

export function Notices(): JSX.Element {
  const [items, setItems] = useState<Notice[]>([]);
  useEffect(() => {
    const add = (n: Notice): void => {
      setItems((xs) => [...xs.slice(-3), n]);
      setTimeout(() => setItems((xs) => xs.filter((x) => x.id !== n.id)), n.kind === 'error' ? 12_000 : 5_000);
    };
    listeners.add(add);
    return () => listeners.delete(add);
  }, []);
  return (
    <div class="notices" role="status" aria-live="polite">
      {items.map((n) => (
        <p key={n.id} class={`notice ${n.kind}`}>
          {n.text}
          <button
            type="button"
            class="link"
            aria-label="Dismiss"
            onClick={() => setItems((xs) => xs.filter((x) => x.id !== n.id))}
          >
            ×
          </button>
        </p>
      ))}
    </div>
  );
}

// ── loading ─────────────────────────────────────────────────────────────────────

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
}

/** Runs `load` when `deps` change (and on reload()), keeping the last answer while the next loads. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({
    data: undefined,
    error: undefined,
    loading: true,
  });
  const [tick, setTick] = useState(0);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => live && setState({ data, error: undefined, loading: false }),
      (error: unknown) => live && setState((s) => ({ data: s.data, error, loading: false })),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  return { ...state, reload };
}

/** Calls `tick` every `ms` while `active`, not while the tab is hidden. */
export function useInterval(tick: () => void, ms: number, active = true): void {
  const saved = useRef(tick);
  saved.current = tick;
  useEffect(() => {
    if (!active) return;
    const id = setInterval(() => {
      if (document.visibilityState !== 'hidden') saved.current();
    }, ms);
    return () => clearInterval(id);
  }, [ms, active]);
}

// ── small components ─────────────────────────────────────────────────────────

export function ErrorNote({ error }: { error: unknown }): JSX.Element | null {
  if (!error) return null;
  return (
    <p class="error" role="alert">
      {messageOf(error)}
    </p>
  );
}

export function Loading({ loaded }: { loaded: Loaded<unknown> }): JSX.Element | null {
  if (loaded.error) return <ErrorNote error={loaded.error} />;
  if (loaded.loading && loaded.data === undefined) return <p class="muted">Loading…</p>;
  return null;
}

const TONES: Array<[RegExp, string]> = [
  [/^(Running|CompletedSuccessfully|Idle|OnDemand|WaitingForEvent|Enabled|Success|Succeeded|Ready)$/, 'good'],
  [/(InProgress|Starting|Preparing|Stopping|Restart|Updat|Waiting|Provisioning)/, 'busy'],
  [/(Failed|Fatal|Error|Shutdown|Obsolete|HeartbeatLate|Unknown)/, 'bad'],
  [/(Disabled|Incomplete)/, 'off'],
];

/** A status word with a colour and its text (the colour is never the only sign). */
export function Status({ value }: { value: string | null | undefined }): JSX.Element {
  const v = value ?? 'Unknown';
  const tone = TONES.find(([re]) => re.test(v))?.[1] ?? 'off';
  return <span class={`status ${tone}`}>{v}</span>;
}

/** A button that runs an async action, is disabled while it runs and reports its outcome. */
export function Action(props: {
  label: string;
  run: () => Promise<unknown>;
  done?: string | ((answer: unknown) => string);
  confirm?: string;
  disabled?: boolean;
  kind?: 'primary' | 'danger' | 'plain';
  title?: string;
}): JSX.Element {
  const [busy, setBusy] = useState(false);
  const click = async (): Promise<void> => {
    if (props.confirm && !window.confirm(props.confirm)) return;
    setBusy(true);
    try {
      const answer = await props.run();
      const done = typeof props.done === 'function' ? props.done(answer) : props.done;
      if (done) notify(done);
    } catch (err) {
      notify(`${props.label}: ${messageOf(err)}`, 'error');
    } finally {
      setBusy(false);
    }
  };
  return (
    <button
      type="button"
      class={props.kind ?? 'plain'}
      disabled={busy || props.disabled}
      aria-busy={busy}
      title={props.title}
      onClick={() => void click()}
    >
      {busy ? `${props.label}…` : props.label}
    </button>
  );
}

/** Previous / next for a list of {@link PAGE_SIZE}, with where the reader is. */
export function Pager(props: {
  offset: number;
  total: number;
  onChange: (offset: number) => void;
}): JSX.Element | null {
  const { offset, total } = props;
  if (total <= PAGE_SIZE && offset === 0) return null;
  const last = Math.min(offset + PAGE_SIZE, total);
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled={offset === 0} onClick={() => props.onChange(Math.max(0, offset - PAGE_SIZE))}>
        ← Previous
      </button>
      <span>
        {total === 0 ? 0 : offset + 1}–{last} of {total}
      </span>
      <button type="button" disabled={last >= total} onClick={() => props.onChange(offset + PAGE_SIZE)}>
        Next →
      </button>
    </nav>
  );
}

/** A table that scrolls sideways on a narrow screen rather than squeezing its columns. */
export function Table(props: {
  caption: string;
  head: string[];
  children: ComponentChildren;
  empty?: string;
}): JSX.Element {
  const rows = Array.isArray(props.children)
    ? props.children.flat().filter(Boolean)
    : props.children
      ? [props.children]
      : [];
  return (
    <div class="table-wrap" tabIndex={0} role="region" aria-label={props.caption}>
      <table>
        <caption class="visually-hidden">{props.caption}</caption>
        <thead>
          <tr>
            {props.head.map((h) => (
              <th key={h} scope="col">
                {h}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.length === 0 ? (
            <tr>
              <td colSpan={props.head.length} class="muted">
                {props.empty ?? 'Nothing here.'}
              </td>
            </tr>
          ) : (
            props.children
          )}
        </tbody>
      </table>
    </div>
  );
}

export function Section(props: {
  title: string;
  children: ComponentChildren;
  actions?: ComponentChildren;
  id?: string;
}): JSX.Element {
  return (
    <section class="card" aria-labelledby={props.id}>
      <header class="card-head">
        <h2 id={props.id}>{props.title}</h2>
        {props.actions && <div class="actions">{props.actions}</div>}
      </header>
      {props.children}
    </section>
  );
}

/** Counts by key, largest first. */
export function countBy<T>(items: T[], key: (t: T) => string): Array<[string, number]> {
  const m = new Map<string, number>();
  for (const it of items) m.set(key(it), (m.get(key(it)) ?? 0) + 1);
  return [...m.entries()].sort((a, b) => b[1] - a[1]);
}

/** A text field of a submitted form ('' when absent). */
export function field(form: FormData, name: string): string {
  const v = form.get(name);
  return typeof v === 'string' ? v : '';
}

/**
 * A form's select that starts at `initial` and then follows the user (a select has no
 * defaultValue of its own); it follows `initial` again when that changes (the page's address did).
 */
export function FormSelect(props: {
  name: string;
  initial: string;
  options: Array<[value: string, label: string]>;
  required?: boolean;
}): JSX.Element {
  const [value, setValue] = useState(props.initial);
  useEffect(() => setValue(props.initial), [props.initial]);
  return (
    <select name={props.name} value={value} required={props.required} onChange={(e) => setValue(e.currentTarget.value)}>
      {props.options.map(([v, label]) => (
        <option key={v} value={v}>
          {label}
        </option>
      ))}
    </select>
  );
}
