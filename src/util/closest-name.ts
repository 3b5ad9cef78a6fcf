/**
 * "Did you mean …?" for a misspelt name: the formula language's unknown functions, a Map's unknown
 * entities and fields, the API's near-miss query parameters. Pure, no Node imports.
 */

/** Levenshtein distance: insertions, deletions and substitutions, each costing one. */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(
        (prev[j] as number) + 1,
        (cur[j - 1] as number) + 1,
        (prev[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    prev = cur;
  }
  return prev[b.length] as number;
}

/**
 * The candidate nearest to `name`, at most `maxDistance` edits away (a case-insensitive match
 * first), or undefined. An exact match is not a suggestion: callers ask only about unknown names.
 */
export function closestName(name: string, candidates: Iterable<string>, maxDistance = 2): string | undefined {
  const lower = name.toLowerCase();
  let best: string | undefined;
  let bestDistance = maxDistance + 1;
  for (const candidate of candidates) {
    if (candidate === name) continue;
    if (candidate.toLowerCase() === lower) return candidate;
    if (Math.abs(candidate.length - name.length) >= bestDistance) continue;
    const d = editDistance(lower, candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

/** " (did you mean X?)" when a known name is a near miss of `name` (case, or at most two edits), else "". */
export function didYouMean(name: string | undefined, known: Iterable<string>): string {
  const hint = name ? closestName(name, known) : undefined;
  return hint ? ` (did you mean ${hint}?)` : '';
}
