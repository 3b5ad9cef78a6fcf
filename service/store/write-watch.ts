import type {
  KyselyPlugin,
  OperationNode,
  PluginTransformQueryArgs,
  PluginTransformResultArgs,
  QueryResult,
  RootOperationNode,
  UnknownRow,
} from 'kysely';

/** Which writes to a table a watcher hears of: inserts and deletes always, updates only of `columns`. */
export interface WatchedTable {
  readonly table: string;
  /** The columns whose update matters (camelCase or snake_case); absent: every update. */
  readonly columns?: readonly string[];
}

interface Watcher {
  readonly tables: Map<string, Set<string> | undefined>;
  readonly listener: () => void;
}

/** `messageEndpoints`, `message_endpoints` → `messageendpoints`: one spelling before and after CamelCasePlugin. */
const keyOf = (name: string): string => name.replace(/_/g, '').toLowerCase();

/**
 * A Kysely plugin that tells watchers of the writes the Service itself makes to the tables they
 * watch, as each statement is sent (before its transaction commits): the caches of what rarely
 * changes (service/events/access-cache.ts) drop their entries on it. Statements written as raw SQL
 * are not seen; the Service writes these tables through the query builder only.
 */
export class WriteWatch implements KyselyPlugin {
  readonly #watchers = new Set<Watcher>();

  /** Calls `listener` on each write to one of `tables`; returns the function that stops it. */
  watch(tables: readonly WatchedTable[], listener: () => void): () => void {
    const watcher: Watcher = {
      tables: new Map(tables.map((t) => [keyOf(t.table), t.columns ? new Set(t.columns.map(keyOf)) : undefined])),
      listener,
    };
    this.#watchers.add(watcher);
    return () => this.#watchers.delete(watcher);
  }

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    if (this.#watchers.size > 0) this.#heard(args.node);
    return args.node;
  }

  transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return Promise.resolve(args.result);
  }

  #heard(node: RootOperationNode): void {
    const write = writeOf(node);
    if (!write) return;
    for (const w of this.#watchers) {
      if (!w.tables.has(write.table)) continue;
      const columns = w.tables.get(write.table);
      if (write.columns && columns && !write.columns.some((c) => columns.has(c))) continue;
      w.listener();
    }
  }
}

/** The table a write goes to, and for an update the columns it sets. */
function writeOf(node: RootOperationNode): { table: string; columns?: string[] } | undefined {
  switch (node.kind) {
    case 'InsertQueryNode':
      return node.into ? { table: tableName(node.into) } : undefined;
    case 'DeleteQueryNode': {
      const from = node.from.froms[0];
      return from ? { table: tableName(from) } : undefined;
    }
    case 'UpdateQueryNode': {
      if (!node.table) return undefined;
      const columns = (node.updates ?? []).map((u) => columnName(u.column));
      return { table: tableName(node.table), columns };
    }
    default:
      return undefined;
  }
}

/** The name of a TableNode, or of the table an AliasNode (`solutions as s`) names. */
function tableName(node: OperationNode): string {
  const n = node as { kind: string; node?: OperationNode; table?: { identifier: { name: string } } };
  if (n.kind === 'AliasNode' && n.node) return tableName(n.node);
  return n.kind === 'TableNode' && n.table ? keyOf(n.table.identifier.name) : '';
}

/** The name of a ColumnNode (`SET is_disabled = …`); '' for any other node. */
function columnName(node: OperationNode): string {
  const n = node as { kind: string; column?: { name: string } };
  return n.kind === 'ColumnNode' && n.column ? keyOf(n.column.name) : '';
}
