import { Writable } from 'node:stream';
import Fastify from 'fastify';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { RequestLinesAtDebug, withoutSecrets } from '../../../../service/http/app.js';

describe("an Event Solution's token in a request line", () => {
  it('is replaced in the URL, whatever the case of the parameter, and the rest is kept', () => {
    expect(withoutSecrets('/v1/orgs/1/messages/7?accesstoken=abc-123')).toBe(
      '/v1/orgs/1/messages/7?accesstoken=[redacted]',
    );
    expect(withoutSecrets('/v1/orgs/1/requests/7?x=1&AccessToken=SECRET&y=2')).toBe(
      '/v1/orgs/1/requests/7?x=1&AccessToken=[redacted]&y=2',
    );
    expect(withoutSecrets('/v1/orgs/1/solutions?limit=5')).toBe('/v1/orgs/1/solutions?limit=5');
  });

  it("never reaches the Service's request lines, even at debug", async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString('utf8'));
        done();
      },
    });
    const app = Fastify({ loggerInstance: pino({ level: 'debug' }, sink), logController: new RequestLinesAtDebug() });
    app.post('/v1/orgs/:orgId/messages/:mapId', async () => ({ accepted: 1 }));
    const res = await app.inject({
      method: 'POST',
      url: '/v1/orgs/1/messages/2?accesstoken=S3CRET-TOKEN',
      payload: {},
    });
    await app.close();
    expect(res.statusCode).toBe(200);
    const text = lines.join('');
    expect(text).toContain('incoming request');
    expect(text).toContain('/v1/orgs/1/messages/2?accesstoken=[redacted]');
    expect(text).not.toContain('S3CRET-TOKEN');
  });
});
