/**
 * How the API client prints: for a person on a terminal (tables, pretty JSON), for a program when
 * piped or with `--json` (JSON only on stdout, one document per command).
 */

/** JSON when asked for, or when stdout is not a terminal. */
export function wantsJson(flag: boolean | undefined): boolean {
  return flag === true || !process.stdout.isTTY;
}

/** Prints a JSON document: indented on a terminal, one line when piped. */
export function printJson(value: unknown): void {
  process.stdout.write(`${process.stdout.isTTY ? JSON.stringify(value, null, 2) : JSON.stringify(value)}\n`);
}

export interface Column<T> {
  header: string;
  value: (row: T) => string;
}

/** Prints rows as an aligned table with a header line; "(none)" when there are none. */
export function printTable<T>(rows: readonly T[], columns: ReadonlyArray<Column<T>>): void {
  if (rows.length === 0) {
    process.stdout.write('(none)\n');
    return;
  }
  const cells = rows.map((r) => columns.map((c) => oneLine(c.value(r))));
  const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((row) => (row[i] ?? '').length)));
  const line = (values: readonly string[]): string =>
    values
      .map((v, i) => (i === values.length - 1 ? v : v.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  process.stdout.write(`${[line(columns.map((c) => c.header)), ...cells.map(line)].join('\n')}\n`);
}

/** Prints `label: value` pairs aligned on the colon. */
export function printFields(fields: ReadonlyArray<readonly [string, string]>): void {
  const width = Math.max(0, ...fields.map(([k]) => k.length));
  process.stdout.write(fields.map(([k, v]) => `${`${k}:`.padEnd(width + 2)}${oneLine(v)}`).join('\n') + '\n');
}

function oneLine(text: string): string {
  return text.replace(/[\r\n\t]+/g, ' ');
}
