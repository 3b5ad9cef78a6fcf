import { describe, expect, it } from 'vitest';
import { collectPreview } from '../../../src/agent/commands/preview-query.command.js';
import { FromService } from '../../../src/protocol/commands.js';
import { PREVIEW_LIMIT, PreviewResult } from '../../../src/protocol/previews.js';
import { StartSolutionCommand } from '../../../src/protocol/solutions.js';

async function* batches(
  total: number,
  size: number,
  pulled: { n: number },
): AsyncGenerator<Array<Record<string, string | number>>> {
  for (let i = 0; i < total; i += size) {
    pulled.n++;
    yield Array.from({ length: Math.min(size, total - i) }, (_, k) => ({ id: i + k + 1, name: `r${i + k + 1}` }));
  }
}

describe('preview commands on the channel', () => {
  it('accepts previewQuery and nativeQueryTest as Service requests, with at most 100 records asked', () => {
    const base = { id: 'c1', connectionId: 'x', connectorId: 'y', properties: { file: '/tmp/a.db' } };
    expect(
      FromService.safeParse({
        ...base,
        type: 'previewQuery',
        entity: 'items',
        filter: { op: '=', field: 'id', value: 1 },
        limit: 100,
      }).success,
    ).toBe(true);
    expect(FromService.safeParse({ ...base, type: 'nativeQueryTest', statement: 'SELECT 1', limit: 5 }).success).toBe(
      true,
    );
    expect(FromService.safeParse({ ...base, type: 'previewQuery', entity: 'items', limit: 101 }).success).toBe(false);
    expect(FromService.safeParse({ ...base, type: 'nativeQueryTest', statement: '', limit: 5 }).success).toBe(false);
  });

  it('carries the Maps of a single-Map run in startSolution', () => {
    expect(
      StartSolutionCommand.parse({ id: 'c', type: 'startSolution', solutionId: 's', runId: 'r', mapIds: [12] }).mapIds,
    ).toEqual([12]);
    expect(
      StartSolutionCommand.safeParse({ id: 'c', type: 'startSolution', solutionId: 's', runId: 'r', mapIds: [] })
        .success,
    ).toBe(false);
  });
});

describe('collectPreview', () => {
  it('keeps the first `limit` records, says there are more, and stops pulling', async () => {
    const pulled = { n: 0 };
    const r = await collectPreview(batches(10_000, 30, pulled), PREVIEW_LIMIT);
    expect(r.records).toHaveLength(100);
    expect(r.records[99]).toEqual({ id: 100, name: 'r100' });
    expect(r.fields).toEqual(['id', 'name']);
    expect(r.truncated).toBe(true);
    expect(pulled.n).toBe(4);
    expect(PreviewResult.safeParse(r).success).toBe(true);
  });

  it('is not truncated when every record fits', async () => {
    const r = await collectPreview(batches(7, 3, { n: 0 }), 100);
    expect(r).toMatchObject({ truncated: false });
    expect(r.records).toHaveLength(7);
    const none = await collectPreview(batches(0, 3, { n: 0 }), 100);
    expect(none).toEqual({ records: [], fields: [], truncated: false });
  });

  it('answers fewer records when they would not fit in the byte budget', async () => {
    const r = await collectPreview(batches(50, 10, { n: 0 }), 100, 200);
    expect(r.truncated).toBe(true);
    expect(Buffer.byteLength(JSON.stringify(r.records))).toBeLessThanOrEqual(200 + r.records.length + 2);
    expect(r.records.length).toBeGreaterThan(0);
    expect(r.records.length).toBeLessThan(50);
  });
});
