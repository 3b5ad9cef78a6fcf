import {
  ConnectorError,
  type CallContext,
  type ConnectionMetadata,
  type ConnectionProperties,
  type ConnectorPlugin,
  type ConnectorRecord,
  type ConnectorSession,
  type Filter,
  type QueryOptions,
  type RecordBatch,
  type WriteAction,
  type WriteOptions,
  type WriteResult,
} from '../../src/connectors/sdk.js';
import { parseProps, type HttpProps } from './properties.js';
import type { EntityDef } from './definition.js';
import { Auth } from './auth.js';
import { HttpClient } from './client.js';
import { connectionMetadata } from './metadata.js';
import { queryEntity } from './query.js';
import { writeRecords } from './write.js';
import { statusText } from './errors.js';

/**
 * The HTTP / JSON API Connector (docs/connectors.md "http"): one configurable Connector for REST
 * APIs. The entities, their paths, pagination and write requests come from the Connection's
 * `definition` (definition.ts); requests go through one client that authenticates (auth.ts),
 * retries and respects rate limits (client.ts).
 */
class HttpSession implements ConnectorSession {
  constructor(
    private readonly props: HttpProps,
    private readonly client: HttpClient,
  ) {}

  private entity(fullName: string): EntityDef {
    const e = this.props.definition.byName.get(fullName);
    if (!e) throw new ConnectorError('EntityNotFound', `The definition has no entity ${fullName}.`);
    return e;
  }

  /** Reads the test path, or the first page of the first readable entity: reach, credentials, permission. */
  async test(ctx: CallContext): Promise<void> {
    const def = this.props.definition;
    const entity = def.entities.find((e) => e.readPath);
    if (!def.testPath && entity) {
      for await (const _ of queryEntity(this.client, entity, undefined, { batchSize: 1, limit: 1 }, ctx)) break;
      return;
    }
    const url = this.client.resolve(def.testPath ?? '');
    const res = await this.client.send({ method: 'GET', url }, ctx);
    if (res.status < 200 || res.status >= 300)
      throw new ConnectorError(
        res.status === 404 ? 'InvalidProperties' : 'Datastore',
        `The test request ${this.client.describe('GET', url)} failed: the API answered ${statusText(res.status, res.text)}.`,
        { nativeCode: String(res.status) },
      );
  }

  metadata(_ctx: CallContext): Promise<ConnectionMetadata> {
    return Promise.resolve(connectionMetadata(this.props.definition));
  }

  async *query(
    entity: string,
    filter: Filter | undefined,
    options: QueryOptions,
    ctx: CallContext,
  ): AsyncGenerator<RecordBatch, void, undefined> {
    yield* queryEntity(this.client, this.entity(entity), filter, options, ctx);
  }

  write(
    action: WriteAction,
    entity: string,
    batch: readonly ConnectorRecord[],
    options: WriteOptions,
    ctx: CallContext,
  ): Promise<WriteResult[]> {
    return writeRecords(this.client, this.entity(entity), action, batch, options, ctx);
  }

  disconnect(_ctx: CallContext): Promise<void> {
    return Promise.resolve();
  }
}

function open(properties: ConnectionProperties): HttpSession {
  const props = parseProps(properties);
  return new HttpSession(props, new HttpClient(props, new Auth(props.auth, props.timeoutMs)));
}

const plugin = {
  async preconnect(properties: ConnectionProperties, ctx: CallContext) {
    await open(properties).test(ctx);
    return { reply: 'SUCCESS' };
  },
  connect(properties: ConnectionProperties, _ctx: CallContext): Promise<ConnectorSession> {
    return Promise.resolve(open(properties));
  },
};

export default plugin satisfies ConnectorPlugin;
