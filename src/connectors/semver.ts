/**
 * The little of semantic versioning the plugin host needs: does a version satisfy a range of the
 * forms `1.2.3`, `=1.2.3`, `^1.2.3`, `~1.2.3`, `>=1.0.0 <2.0.0` (space = and), joined by `||`.
 * Partial versions (`^1`, `~1.2`) fill with zeros. Pre-release tags order before their release.
 */

type Version = [number, number, number, string];

export function parseVersion(v: string): Version | undefined {
  const m = /^\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?\s*$/.exec(v);
  if (!m) return undefined;
  return [Number(m[1]), Number(m[2] ?? 0), Number(m[3] ?? 0), m[4] ?? ''];
}

function cmp(a: Version, b: Version): number {
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return (a[i] as number) < (b[i] as number) ? -1 : 1;
  if (a[3] === b[3]) return 0;
  if (a[3] === '') return 1;
  if (b[3] === '') return -1;
  return a[3] < b[3] ? -1 : 1;
}

/** -1, 0 or 1 as `a` orders before, with or after `b`; undefined when either is not a version. */
export function compareVersion(a: string, b: string): -1 | 0 | 1 | undefined {
  const va = parseVersion(a);
  const vb = parseVersion(b);
  return va && vb ? (cmp(va, vb) as -1 | 0 | 1) : undefined;
}

function partsGiven(v: string): number {
  return v.replace(/[-+].*$/, '').split('.').length;
}

function satisfiesComparator(v: Version, comp: string): boolean {
  const m = /^(\^|~|>=|<=|>|<|=)?\s*(.+)$/.exec(comp.trim());
  if (!m?.[2]) return false;
  const op = m[1] ?? '=';
  const base = parseVersion(m[2]);
  if (!base) return false;
  const given = partsGiven(m[2]);
  const c = cmp(v, base);
  switch (op) {
    case '>=':
      return c >= 0;
    case '<=':
      return c <= 0;
    case '>':
      return c > 0;
    case '<':
      return c < 0;
    case '=':
      if (given === 3) return c === 0;
      return v[0] === base[0] && (given < 2 || v[1] === base[1]) && v[3] === '';
    case '~': {
      const upper: Version = given >= 2 ? [base[0], base[1] + 1, 0, ''] : [base[0] + 1, 0, 0, ''];
      return c >= 0 && cmp(v, upper) < 0;
    }
    case '^': {
      const upper: Version =
        base[0] > 0 || given === 1
          ? [base[0] + 1, 0, 0, '']
          : base[1] > 0 || given === 2
            ? [0, base[1] + 1, 0, '']
            : [0, 0, base[2] + 1, ''];
      return c >= 0 && cmp(v, upper) < 0;
    }
    default:
      return false;
  }
}

/** True when `version` satisfies `range`; false for anything unparsable. */
export function satisfies(version: string, range: string): boolean {
  const v = parseVersion(version);
  if (!v) return false;
  return range.split('||').some((alt) => {
    const comps = alt
      .trim()
      .replace(/(>=|<=|>|<|=|\^|~)\s+/g, '$1')
      .split(/\s+/)
      .filter(Boolean);
    return comps.length > 0 && comps.every((c) => satisfiesComparator(v, c));
  });
}
