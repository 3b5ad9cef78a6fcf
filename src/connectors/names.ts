/**
 * fullNames: SPEC.md says entities, fields and relationships are referenced by fullName, which is
 * non-null and holds only letters, digits and underscores. Plugins derive them from the
 * datastore's own names with these helpers so that every connector does it the same way.
 */

/** `Order Lines-2024` → `Order_Lines_2024`; an empty name becomes `_`. */
export function toFullName(name: string): string {
  const s = name.replace(/[^A-Za-z0-9_]/g, '_');
  return s === '' ? '_' : s;
}

/**
 * fullNames for a list of names, unique case-insensitively (a later duplicate gets `_2`, `_3` …),
 * in input order.
 */
export function uniqueFullNames(names: readonly string[]): string[] {
  const taken = new Set<string>();
  return names.map((n) => {
    const base = toFullName(n);
    let candidate = base;
    for (let i = 2; taken.has(candidate.toLowerCase()); i++) candidate = `${base}_${i}`;
    taken.add(candidate.toLowerCase());
    return candidate;
  });
}

/** True when `s` is a valid fullName. */
export function isFullName(s: string): boolean {
  return /^[A-Za-z0-9_]+$/.test(s);
}
