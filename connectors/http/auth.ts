import { ConnectorError, type CallContext } from '../../src/connectors/sdk.js';
import type { AuthProps } from './properties.js';
import { networkCode, statusText } from './errors.js';

/**
 * Credentials on each request: a Basic or Bearer header, an API key in a header or a query
 * parameter, or an OAuth 2.0 access token got with the client-credentials grant (RFC 6749 §4.4),
 * kept until shortly before it expires and fetched again then or when the API answers 401/403.
 * Secrets and tokens never reach a message or a log line: messages name the token endpoint's
 * status and its error code only.
 */
export class Auth {
  private token: { value: string; expiresAt: number } | undefined;
  private pending: Promise<string> | undefined;

  constructor(
    private readonly props: AuthProps,
    private readonly timeoutMs: number,
  ) {}

  /** A query parameter that carries a secret: left out of every URL a message or log line names. */
  get secretParam(): string | undefined {
    return this.props.type === 'apiKey' && this.props.in === 'query' ? this.props.name : undefined;
  }

  /** The texts an answer must not carry into a message: secrets, the Basic credentials, the access token. */
  secrets(): string[] {
    const p = this.props;
    const out: string[] = [];
    if (p.type === 'basic') out.push(p.password, Buffer.from(`${p.username}:${p.password}`).toString('base64'));
    if (p.type === 'bearer') out.push(p.token);
    if (p.type === 'apiKey') out.push(p.key, encodeURIComponent(p.key));
    if (p.type === 'oauth2') out.push(p.clientSecret, encodeURIComponent(p.clientSecret));
    if (this.token) out.push(this.token.value);
    return out.filter((s) => s.length >= 4);
  }

  /** Whether {@link refresh} can get new credentials (only OAuth can). */
  get refreshable(): boolean {
    return this.props.type === 'oauth2';
  }

  /** Adds the credentials to a request about to be sent. */
  async apply(headers: Record<string, string>, url: URL, ctx: CallContext): Promise<void> {
    const p = this.props;
    switch (p.type) {
      case 'none':
        return;
      case 'basic':
        headers['authorization'] = `Basic ${Buffer.from(`${p.username}:${p.password}`).toString('base64')}`;
        return;
      case 'bearer':
        headers['authorization'] = `Bearer ${p.token}`;
        return;
      case 'apiKey':
        if (p.in === 'header') headers[p.name.toLowerCase()] = p.key;
        else url.searchParams.set(p.name, p.key);
        return;
      case 'oauth2':
        headers['authorization'] = `Bearer ${await this.accessToken(ctx)}`;
        return;
    }
  }

  /** After a 401/403: forgets the access token so that the next request fetches a new one. */
  refresh(): boolean {
    if (!this.refreshable) return false;
    this.token = undefined;
    return true;
  }

  private async accessToken(ctx: CallContext): Promise<string> {
    if (this.token && Date.now() < this.token.expiresAt) return this.token.value;
    // One fetch for every request that needs a token at the same time.
    this.pending ??= this.fetchToken(ctx).finally(() => (this.pending = undefined));
    return this.pending;
  }

  private async fetchToken(ctx: CallContext): Promise<string> {
    const p = this.props;
    if (p.type !== 'oauth2') throw new Error('not an OAuth connection');
    const form = new URLSearchParams({ grant_type: 'client_credentials' });
    const headers: Record<string, string> = {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
    };
    if (p.clientAuth === 'basic')
      headers['authorization'] =
        `Basic ${Buffer.from(`${encodeURIComponent(p.clientId)}:${encodeURIComponent(p.clientSecret)}`).toString('base64')}`;
    else {
      form.set('client_id', p.clientId);
      form.set('client_secret', p.clientSecret);
    }
    if (p.scope) form.set('scope', p.scope);
    const where = `The OAuth token endpoint ${p.tokenUrl.origin}${p.tokenUrl.pathname}`;
    const signal = AbortSignal.any([ctx.signal, AbortSignal.timeout(this.timeoutMs)]);
    let status: number;
    let text: string;
    try {
      const res = await fetch(p.tokenUrl, { method: 'POST', headers, body: form.toString(), signal });
      status = res.status;
      text = await res.text();
    } catch (err) {
      if (ctx.signal.aborted) throw new ConnectorError('Aborted', 'The call was cancelled.');
      const code = networkCode(err);
      throw new ConnectorError(
        'Unreachable',
        `${where} cannot be reached${code ? ` (${code})` : signal.aborted ? ' (time-out)' : ''}.`,
        code ? { nativeCode: code } : {},
      );
    }
    if (status >= 500 || status === 429)
      throw new ConnectorError('Datastore', `${where} failed: ${statusText(status, text)}.`, {
        nativeCode: String(status),
      });
    let body: { access_token?: unknown; expires_in?: unknown; error?: unknown } = {};
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      // judged below
    }
    if (status >= 400 || typeof body.access_token !== 'string' || body.access_token === '') {
      // Only the error code of the answer (RFC 6749 §5.2): its other fields may echo what was sent.
      const code = typeof body.error === 'string' ? ` (${body.error.slice(0, 100)})` : '';
      throw new ConnectorError(
        'AuthFailed',
        status >= 400
          ? `${where} refused the client credentials: HTTP ${status}${code}.`
          : `${where} answered no access_token.`,
        { nativeCode: String(status) },
      );
    }
    const expiresIn = Number(body.expires_in);
    // Fetched again a little before it expires (a tenth of its life, at most a minute), so that a
    // request never leaves with a token about to lapse.
    const life = Number.isFinite(expiresIn) && expiresIn > 0 ? expiresIn * 1000 : Infinity;
    this.token = { value: body.access_token, expiresAt: Date.now() + life - Math.min(60_000, life / 10) };
    ctx.log.debug({ expiresInSeconds: Number.isFinite(life) ? expiresIn : null }, 'oauth access token fetched');
    return body.access_token;
  }
}
