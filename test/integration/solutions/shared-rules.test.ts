import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SHARED_RULES } from '../../../service/solutions/shared.js';
import { startService, type TestService } from '../../helpers/service.js';

/**
 * The table of calls shared-resource Solutions may not make (service/solutions/shared.ts) names
 * routes by method and path: each must be a route the Service serves, or its 409 would never come.
 */
describe('the shared-resource rules', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService({ name: 'sqlite' }, { cloudAgents: 'off' });
  }, 60_000);
  afterAll(async () => svc?.close());

  it('name only routes the Service serves', () => {
    const missing = [...SHARED_RULES.keys()].filter((key) => {
      const [method = '', url = ''] = key.split(' ');
      return !svc.service.app.hasRoute({ method, url });
    });
    expect(missing).toEqual([]);
    // The check tells methods apart: a method the path does not serve is not a route.
    expect(svc.service.app.hasRoute({ method: 'DELETE', url: '/v1/orgs/:orgId/solutions/:solutionId/schedule' })).toBe(
      false,
    );
    expect(SHARED_RULES.size).toBeGreaterThanOrEqual(30);
  });
});
