/**
 * docs/maps.md lists every `blockType` with its `action` exactly as `DEFAULT_ACTION` pairs them.
 * Regenerate the table with `UPDATE_MAP_DOCS=1 npx vitest run test/unit/protocol/block-actions-doc.test.ts`.
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { BLOCK_ACTIONS, BLOCK_TYPES, DEFAULT_ACTION, MapModel } from '../../../src/protocol/map.js';

const DOC = new URL('../../../docs/maps.md', import.meta.url);
const START = '<!-- block-actions:start -->';
const END = '<!-- block-actions:end -->';

function renderTable(): string {
  const rows = BLOCK_TYPES.map((t) => `| \`${t}\` | \`${DEFAULT_ACTION[t]}\` |`);
  return [START, '| blockType | action |', '|---|---|', ...rows, END].join('\n');
}

describe('docs/maps.md, the blockType/action pairs', () => {
  it('holds the table rendered from src/protocol/map.ts', () => {
    let doc = fs.readFileSync(DOC, 'utf8');
    const at = doc.indexOf(START);
    const end = doc.indexOf(END);
    expect(at, 'the table markers are missing').toBeGreaterThanOrEqual(0);
    const current = doc.slice(at, end + END.length);
    if (process.env['UPDATE_MAP_DOCS'] === '1' && current !== renderTable()) {
      doc = doc.slice(0, at) + renderTable() + doc.slice(end + END.length);
      fs.writeFileSync(DOC, doc);
    }
    expect(
      doc.slice(doc.indexOf(START), doc.indexOf(END) + END.length),
      'run with UPDATE_MAP_DOCS=1 to regenerate',
    ).toBe(renderTable());
  });

  it('pairs every Block kind with an action the model accepts', () => {
    for (const t of BLOCK_TYPES) expect(BLOCK_ACTIONS).toContain(DEFAULT_ACTION[t]);
  });

  it('refuses "Upsert" as an action and accepts InsertUpdate', () => {
    const map = (action: string) => ({
      version: '3.0',
      name: 'Upsert pair',
      blocks: [{ blockId: '00000000-0000-4000-8000-000000000001', name: 'U', blockType: 'Upsert', action }],
    });
    expect(MapModel.safeParse(map('Upsert')).success).toBe(false);
    expect(MapModel.safeParse(map('InsertUpdate')).success).toBe(true);
  });
});
