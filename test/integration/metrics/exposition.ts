/**
 * Reads a Prometheus text exposition into families and samples, and checks it against the
 * naming conventions docs/metrics.md promises: the `ferry_` prefix, base units, `_total` on
 * counters only, histograms in seconds or bytes, and no unbounded label values.
 */

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface Family {
  readonly name: string;
  readonly type: string;
  readonly help: string;
  readonly samples: Sample[];
}

/** prom-client's process metrics that are gauges named `…_total` (a convention of Node's default metrics). */
const DEFAULT_GAUGES_NAMED_TOTAL = new Set([
  'ferry_nodejs_active_handles_total',
  'ferry_nodejs_active_requests_total',
  'ferry_nodejs_active_resources_total',
]);

const GUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;
const NON_BASE_UNIT =
  /_(ms|millis|milliseconds|microseconds|minutes|hours|days|kb|mb|gb|kilobytes|megabytes|percent)(_|$)/;

function parseLabels(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
  for (const m of text.matchAll(re)) labels[m[1] as string] = (m[2] as string).replace(/\\(.)/g, '$1');
  return labels;
}

/** The families of an exposition, by name; a sample belongs to the family its name (less a histogram suffix) names. */
export function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const family = (name: string): Family => {
    let f = families.get(name);
    if (!f) {
      f = { name, type: 'untyped', help: '', samples: [] };
      families.set(name, f);
    }
    return f;
  };
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const meta = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
    if (meta) {
      const f = family(meta[2] as string);
      if (meta[1] === 'TYPE') (f as { type: string }).type = meta[3] as string;
      else (f as { help: string }).help = meta[3] as string;
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)/.exec(line);
    if (!m) throw new Error(`not an exposition line: ${line}`);
    const name = m[1] as string;
    const base = families.has(name) ? name : name.replace(/_(bucket|sum|count)$/, '');
    const f = families.get(base);
    if (!f) throw new Error(`sample ${name} has no # TYPE line`);
    f.samples.push({ name, labels: parseLabels(m[2] ?? ''), value: Number(m[3]) });
  }
  return families;
}

/** Every breach of the conventions, as readable lines (empty: none). */
export function conventionBreaches(families: Map<string, Family>): string[] {
  const out: string[] = [];
  for (const f of families.values()) {
    if (!f.name.startsWith('ferry_')) out.push(`${f.name}: no ferry_ prefix`);
    if (f.help === '') out.push(`${f.name}: no HELP text`);
    if (f.type === 'counter' && !f.name.endsWith('_total')) out.push(`${f.name}: a counter not named …_total`);
    if (f.type !== 'counter' && f.name.endsWith('_total') && !DEFAULT_GAUGES_NAMED_TOTAL.has(f.name))
      out.push(`${f.name}: a ${f.type} named …_total`);
    if (f.type === 'histogram' && !/_(seconds|bytes)$/.test(f.name))
      out.push(`${f.name}: a histogram not in seconds or bytes`);
    if (NON_BASE_UNIT.test(f.name)) out.push(`${f.name}: not in a base unit`);
    for (const s of f.samples) {
      for (const [label, value] of Object.entries(s.labels)) {
        if (GUID.test(value)) out.push(`${s.name}{${label}="${value}"}: a GUID in a label value`);
        if (value.length > 120) out.push(`${s.name}{${label}}: a label value of ${value.length} characters`);
        if (label === 'route' && value !== 'unmatched' && /\/\d+(\/|$)/.test(value))
          out.push(`${s.name}{route="${value}"}: a raw path, not a route pattern`);
      }
    }
  }
  return out;
}

/** The value of the sample `name` with exactly these labels among others (0 when there is none). */
export function valueOf(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number {
  const base = families.has(name) ? name : name.replace(/_(bucket|sum|count)$/, '');
  const f = families.get(base);
  const s = f?.samples.find((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
  return s?.value ?? 0;
}

/** The sum of every sample `name` whose labels include these. */
export function sumOf(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number {
  const base = families.has(name) ? name : name.replace(/_(bucket|sum|count)$/, '');
  return (families.get(base)?.samples ?? [])
    .filter((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v))
    .reduce((n, x) => n + x.value, 0);
}
