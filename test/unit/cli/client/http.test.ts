import { describe, expect, it } from 'vitest';
import { ApiClient, apiErrorOf, retryAfterMs } from '../../../../src/cli/client/http.js';

describe('the API client HTTP helpers', () => {
  it('waits as Retry-After asks, within bounds', () => {
    expect(retryAfterMs('2', 500)).toBe(2000);
    expect(retryAfterMs(null, 500)).toBe(500);
    expect(retryAfterMs('0', 500)).toBe(100);
    expect(retryAfterMs('3600', 500)).toBe(10_000);
    expect(retryAfterMs(new Date(Date.now() + 3000).toUTCString(), 500)).toBeGreaterThan(1000);
  });

  it('turns a problem document into status, title, detail and code; plain text into its text', () => {
    const e = apiErrorOf({
      status: 404,
      headers: new Headers(),
      body: { title: 'Not Found', detail: 'Organization 9 was not found.', code: 'API_NOT_FOUND' },
    });
    expect(e.message).toBe('404 Not Found: Organization 9 was not found. (API_NOT_FOUND)');
    expect(e.exitCode).toBe(1);
    expect(apiErrorOf({ status: 401, headers: new Headers(), body: 'no' }).exitCode).toBe(4);
    expect(apiErrorOf({ status: 502, headers: new Headers(), body: 'Bad gateway' }).message).toBe(
      '502 HTTP 502: Bad gateway',
    );
  });

  it('puts relative paths under /v1 and keeps query pairs in order', () => {
    const client = new ApiClient({ url: 'http://h:1', user: 'u', password: 'p' });
    expect(
      client.url('orgs/1/connections', [
        ['name', 'a b'],
        ['name', 'c'],
      ]).href,
    ).toBe('http://h:1/v1/orgs/1/connections?name=a+b&name=c');
    expect(client.url('/v1/orgs', { limit: 5, offset: undefined }).href).toBe('http://h:1/v1/orgs?limit=5');
  });
});
