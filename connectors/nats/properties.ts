import { ConnectorError, propertyReader, type ConnectionProperties } from '../../src/connectors/sdk.js';

/** The Connection's properties, parsed once in `connect`; the secrets stay in this object. */
export interface NatsProps {
  servers: string[];
  user: string | undefined;
  password: string | undefined;
  token: string | undefined;
  tls: boolean;
  connectTimeoutMs: number;
  reconnectMs: number;
}

const invalid = (message: string): ConnectorError => new ConnectorError('InvalidProperties', message);

/** Reads the properties; a server URL with credentials in it is refused (they belong in the secret properties). */
export function parseProps(p: ConnectionProperties): NatsProps {
  const { text, int } = propertyReader(p);
  const servers = (text('servers') ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (servers.length === 0) throw invalid('The property servers is required: nats://host:4222, comma-separated.');
  for (const s of servers) {
    let u: URL;
    try {
      u = new URL(s.includes('://') ? s : `nats://${s}`);
    } catch {
      throw invalid(`The server ${s} is not a URL such as nats://host:4222.`);
    }
    if (!['nats:', 'tls:', 'ws:', 'wss:'].includes(u.protocol))
      throw invalid(`The server ${s} must start with nats:// or tls://.`);
    if (u.username !== '' || u.password !== '')
      throw invalid('The servers must not hold credentials: give them in the user, password or token properties.');
  }
  const tls = (text('tls') ?? 'false').toLowerCase();
  if (!['true', 'false', 'yes', 'no', '1', '0'].includes(tls)) throw invalid('The property tls must be true or false.');
  return {
    servers,
    user: text('user'),
    password: p['password'] || undefined,
    token: p['token'] || undefined,
    tls: ['true', 'yes', '1'].includes(tls),
    connectTimeoutMs: int('connectTimeoutSeconds', 10, 1, 600) * 1000,
    reconnectMs: int('reconnectSeconds', 30, 0, 86_400) * 1000,
  };
}
