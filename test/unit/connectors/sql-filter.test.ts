import { describe, expect, it } from 'vitest';
import { filterToSql } from '../../../src/connectors/sql-filter.js';
import type { FilterValue } from '../../../src/protocol/filter.js';

function dialect(): { params: FilterValue[]; d: Parameters<typeof filterToSql>[1] } {
  const params: FilterValue[] = [];
  return { params, d: { column: (f) => `"${f}"`, param: (v) => (params.push(v), `$${params.length}`) } };
}

describe('filterToSql', () => {
  it('binds every literal and never writes values into the SQL text', () => {
    const { params, d } = dialect();
    const sql = filterToSql(
      {
        op: 'and',
        args: [
          { op: '=', field: 'name', value: "x' OR '1'='1" },
          { op: 'not', arg: { op: 'in', field: 'id', values: [1, 2] } },
          { op: 'contains', field: 'note', value: '50%_off\\' },
        ],
      },
      d,
    );
    expect(sql).toBe(`(("name" = $1) AND (NOT ("id" = $2 OR "id" = $3)) AND ("note" LIKE $4 ESCAPE '\\'))`);
    expect(params).toEqual(["x' OR '1'='1", 1, 2, '%50\\%\\_off\\\\%']);
  });

  it('keeps SQL semantics for the edge cases: empty IN is false, a null literal is unknown', () => {
    const { params, d } = dialect();
    expect(
      filterToSql(
        {
          op: 'or',
          args: [
            { op: 'in', field: 'a', values: [] },
            { op: '=', field: 'a', value: null },
            { op: 'isNull', field: 'b' },
          ],
        },
        d,
      ),
    ).toBe('((1 = 0) OR (NULL) OR ("b" IS NULL))');
    expect(params).toEqual([]);
  });
});
