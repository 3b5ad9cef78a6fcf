/** One-shot statements against the bench's database. */
import pg from 'pg';

export async function pgExec(url: string, sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}
export async function pgRows<T extends pg.QueryResultRow>(
  url: string,
  sql: string,
  params: unknown[] = [],
): Promise<T[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<T>(sql, params)).rows;
  } finally {
    await c.end();
  }
}

export async function count(url: string, table: string): Promise<number> {
  return Number((await pgRows<{ n: string }>(url, `SELECT count(*) AS n FROM ${table}`))[0]?.n ?? 0);
}
