/**
 * The host's side of the `consume` verb (consume-types.ts): the start is one guarded call like any
 * other (time-out, abort, the plugin's errors as `CON_` FerryErrors); after it, what the plugin
 * calls back is contained too: a throwing `deliver` is logged and never reaches the plugin, and a
 * loss is reported once, as a FerryError, and never after the caller closed the consumption.
 */
import { FerryError } from '../errors/ferry-error.js';
import { guardCall, toHostError, type CallOptions, type CallScope } from './guard.js';
import type { ConsumeOptions, Consumption } from './consume-types.js';
import type { ConnectorSession, MessageSource } from './sdk.js';

/** How long closing a consumption may take before the caller goes on. */
const CLOSE_TIMEOUT_MS = 30_000;

/** Starts consuming `source` through the plugin's session; CON_UNSUPPORTED when the plugin cannot. */
export async function consumeGuarded(
  scope: CallScope,
  session: ConnectorSession,
  source: MessageSource,
  options: ConsumeOptions,
  callOpts: CallOptions,
): Promise<Consumption> {
  if (typeof session.consume !== 'function') {
    throw new FerryError('CON_UNSUPPORTED', `The ${scope.connector} connector is not a message broker.`, {
      details: { connector: scope.connector },
    });
  }
  let ended = false;
  const contained: ConsumeOptions = {
    prefetch: options.prefetch,
    deliver: (d) => {
      if (ended) return;
      try {
        options.deliver(d);
      } catch (err) {
        scope.log.error({ err }, 'a delivery could not be taken in');
      }
    },
    lost: (err) => {
      if (ended) return;
      ended = true;
      options.lost(toHostError(err, scope));
    },
  };
  const consume = session.consume.bind(session);
  const consumption = await guardCall(scope, callOpts, (ctx) => consume(source, contained, ctx));
  return {
    close: async () => {
      if (ended) return;
      ended = true;
      await guardCall({ ...scope, verb: 'close consumption' }, { timeoutMs: CLOSE_TIMEOUT_MS }, () =>
        consumption.close(),
      );
    },
  };
}
