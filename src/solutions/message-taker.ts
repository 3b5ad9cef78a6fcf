import { FerryError } from '../errors/ferry-error.js';
import { TAKE_MESSAGES_PATH, TakeMessagesResponse } from '../protocol/events.js';
import type { MessageTaker } from './message-pump.js';

/**
 * Takes an Event Solution's messages from the Service (`POST /v1/agent/messages/take`, the Agent's
 * bearer credentials). No answer, or a 5xx: AGT_SERVICE_UNREACHABLE (the pump tries again for a
 * while); a refusal (4xx) keeps the Service's code and text.
 */
export function serviceMessageTaker(opts: {
  serviceUrl: string;
  authorization: string;
  timeoutMs?: number;
}): MessageTaker {
  return async (req, signal) => {
    let res: Response;
    try {
      res = await fetch(`${opts.serviceUrl}${TAKE_MESSAGES_PATH}`, {
        method: 'POST',
        headers: { authorization: opts.authorization, 'content-type': 'application/json' },
        body: JSON.stringify(req),
        signal: AbortSignal.any([signal, AbortSignal.timeout(opts.timeoutMs ?? 60_000)]),
      });
    } catch (err) {
      throw new FerryError(
        'AGT_SERVICE_UNREACHABLE',
        `The Event Solution's messages could not be taken from the Service: ${err instanceof Error ? err.message : String(err)}`,
        { details: { solutionId: req.solutionId, mapId: req.mapId } },
      );
    }
    const text = await res.text();
    if (res.status >= 500)
      throw new FerryError('AGT_SERVICE_UNREACHABLE', `The Service answered ${res.status} when messages were taken.`, {
        details: { solutionId: req.solutionId, mapId: req.mapId, status: res.status },
      });
    if (!res.ok) {
      const problem = safeJson(text) as { code?: string; detail?: string } | undefined;
      throw new FerryError(
        'RUN_MESSAGES_REFUSED',
        `The Service refused to hand over the messages of Map ${req.mapId}: ${problem?.detail ?? text.slice(0, 500)}`,
        { details: { solutionId: req.solutionId, mapId: req.mapId, status: res.status, code: problem?.code } },
      );
    }
    return TakeMessagesResponse.parse(JSON.parse(text)).messages;
  };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
