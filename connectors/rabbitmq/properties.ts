import { ConnectorError, propertyReader, type ConnectionProperties } from '../../src/connectors/sdk.js';

/** The Connection's properties, parsed once in `connect`; the password stays in this object. */
export interface RabbitMqProps {
  protocol: 'amqp' | 'amqps';
  host: string;
  port: number;
  user: string | undefined;
  password: string | undefined;
  vhost: string;
  heartbeatSeconds: number;
  connectTimeoutMs: number;
}

const invalid = (message: string): ConnectorError => new ConnectorError('InvalidProperties', message);

function flag(p: ConnectionProperties, name: string): boolean {
  const v = p[name]?.trim().toLowerCase();
  if (!v || ['false', 'no', '0'].includes(v)) return false;
  if (['true', 'yes', '1'].includes(v)) return true;
  throw invalid(`The property ${name} must be true or false.`);
}

/**
 * Reads the properties: `url` (amqp:// or amqps://, host, port and vhost from it) or `host`,
 * `port`, `vhost`, `tls`; `user` and `password` always in their own properties, so that no
 * credential sits in a property that is shown (a URL with a password is refused).
 */
export function parseProps(p: ConnectionProperties): RabbitMqProps {
  const { text, int } = propertyReader(p);
  const base = {
    user: text('user'),
    password: p['password'] || undefined,
    heartbeatSeconds: int('heartbeatSeconds', 30, 0, 3600),
    connectTimeoutMs: int('connectTimeoutSeconds', 10, 1, 600) * 1000,
  };
  const url = text('url');
  if (url === undefined) {
    const tls = flag(p, 'tls');
    return {
      ...base,
      protocol: tls ? 'amqps' : 'amqp',
      host: text('host') ?? 'localhost',
      port: int('port', tls ? 5671 : 5672, 1, 65_535),
      vhost: text('vhost') ?? '/',
    };
  }
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw invalid('The property url must be a URL such as amqp://broker.internal:5672/ (or amqps://).');
  }
  if (u.protocol !== 'amqp:' && u.protocol !== 'amqps:')
    throw invalid(`The property url must start with amqp:// or amqps://, not ${u.protocol}//.`);
  if (u.password !== '')
    throw invalid('The property url must not hold a password: give it in the password property, which is kept secret.');
  const protocol = u.protocol === 'amqps:' ? 'amqps' : 'amqp';
  // The path is the vhost, URL-encoded ("/" is %2F); none means the default one, "/".
  const path = u.pathname.replace(/^\//, '');
  return {
    ...base,
    user: base.user ?? (u.username ? decodeURIComponent(u.username) : undefined),
    protocol,
    host: u.hostname,
    port: u.port ? Number(u.port) : protocol === 'amqps' ? 5671 : 5672,
    vhost: path ? decodeURIComponent(path) : '/',
  };
}

/** Where the Connection points, for messages (never its credentials). */
export function describe(props: RabbitMqProps): string {
  return `${props.protocol}://${props.host}:${props.port} (virtual host ${props.vhost})`;
}
