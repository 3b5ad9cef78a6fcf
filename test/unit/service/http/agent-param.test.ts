import { describe, expect, it } from 'vitest';
import { agentIdsOf } from '../../../../service/http/agent-param.js';

const A = '3f2504e0-4f89-41d3-9a0c-0305e82c3301';
const B = '0b8e1f0e-6a53-4f59-9f55-0c2e7a4d1e11';

describe('agentIdsOf', () => {
  it('finds agentId in the path, the query and the body, under any case', () => {
    expect(
      agentIdsOf({ params: { orgId: '1', agentId: A }, query: { AGENTID: B }, body: { AgentId: A, name: 'x' } }),
    ).toEqual([
      { part: 'params', value: A },
      { part: 'query', value: B },
      { part: 'body', value: A },
    ]);
  });

  it('takes every element of a list, and no empty or missing value', () => {
    expect(agentIdsOf({ params: {}, query: { agentId: [A, B] }, body: { agentId: null } })).toEqual([
      { part: 'query', value: A },
      { part: 'query', value: B },
    ]);
    expect(agentIdsOf({ params: {}, query: { agentId: '' }, body: undefined })).toEqual([]);
    expect(agentIdsOf({ params: {}, query: {}, body: [{ agentId: A }] })).toEqual([]);
  });
});
