/** Options shared by the resource commands of the API client. */
import { UsageError } from './errors.js';

/** `--org N` (or FERRY_ORG): the Organization a resource command works in. */
export function orgOf(value: string | undefined, env: NodeJS.ProcessEnv): number {
  const text = value ?? env['FERRY_ORG'];
  if (text === undefined) throw new UsageError('give the Organization with --org N (or FERRY_ORG)');
  if (!/^[1-9][0-9]{0,9}$/.test(text))
    throw new UsageError(`--org ${text}: an Organization ID is a positive whole number`);
  return Number(text);
}

/** `--set key=value` pairs, in order; a key given twice is refused. */
export function keyValues(pairs: readonly string[], flag: string): Array<[string, string]> {
  const seen = new Set<string>();
  return pairs.map((pair) => {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new UsageError(`${flag} ${pair.split('=')[0] ?? ''}…: write key=value`);
    const key = pair.slice(0, eq);
    if (seen.has(key.toLowerCase())) throw new UsageError(`${flag} ${key} is given twice`);
    seen.add(key.toLowerCase());
    return [key, pair.slice(eq + 1)];
  });
}
