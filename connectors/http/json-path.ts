/**
 * The small JSON paths of an entity definition: `data.items`, `meta.next_cursor`, `0.id`; `$` or
 * the empty string is the document itself (a leading `$.` is allowed). No wildcards, no filters:
 * each segment is one property name (or an array index).
 */
export type JsonPath = readonly string[];

export function parsePath(text: string): JsonPath {
  const t = text.trim();
  if (t === '' || t === '$') return [];
  return (t.startsWith('$.') ? t.slice(2) : t).split('.');
}

export function pathText(path: JsonPath): string {
  return path.length === 0 ? '$' : path.join('.');
}

/** The value at `path`, or undefined when any step is missing. */
export function getPath(doc: unknown, path: JsonPath): unknown {
  let cur = doc;
  for (const seg of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = Object.hasOwn(cur, seg) ? (cur as Record<string, unknown>)[seg] : undefined;
  }
  return cur;
}

/** Sets `value` at `path` in `doc`, making the objects on the way. */
export function setPath(doc: Record<string, unknown>, path: JsonPath, value: unknown): void {
  let cur = doc;
  for (let i = 0; i < path.length - 1; i++) {
    const seg = path[i] as string;
    const next = cur[seg];
    if (next !== null && typeof next === 'object' && !Array.isArray(next)) cur = next as Record<string, unknown>;
    else {
      const made: Record<string, unknown> = {};
      Object.defineProperty(cur, seg, { value: made, enumerable: true, writable: true, configurable: true });
      cur = made;
    }
  }
  const last = path[path.length - 1] as string;
  Object.defineProperty(cur, last, { value, enumerable: true, writable: true, configurable: true });
}
