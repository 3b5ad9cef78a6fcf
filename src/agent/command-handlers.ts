import { FerryError } from '../errors/ferry-error.js';
import {
  COMMANDS,
  type CommandAnswer,
  type CommandKind,
  type CommandRequest,
  type ServiceRequest,
} from '../protocol/commands.js';

/**
 * What the Agent does for a command of kind `K`: what it resolves with is the reply's `result`,
 * typed by the command table (src/protocol/commands.ts); what it throws is the error reply.
 */
export type CommandHandler<K extends CommandKind> = (command: CommandRequest<K>) => Promise<CommandAnswer<K>>;

/** A handler of any kind, as the table keeps it: it checks the kind before it calls the typed one. */
type AnyCommandHandler = (command: ServiceRequest) => Promise<unknown>;

function isKind<K extends CommandKind>(
  command: ServiceRequest,
  kind: K,
): command is Extract<ServiceRequest, CommandRequest<K>> {
  return command.type === kind;
}

/** The error reply to a command the Agent has no handler for: what an Agent without the command answers. */
function noHandler(kind: string): FerryError {
  return new FerryError('CHN_INVALID_MESSAGE', `This Agent does not carry out the ${kind} command; update the Agent.`, {
    details: { command: kind },
  });
}

/**
 * The kind → handler table of the commands the Service sends, the Agent's side of the command
 * table as `ReportHandlers` (service/gateway/report-handlers.ts) is the Service's side of the
 * reports. The composition root registers one handler per kind (`src/agent/commands/`), so the
 * channel knows no command: a new kind is a new handler file and one line of registration.
 * A kind without a handler is answered as an Agent that lacks the command answers it
 * (CHN_INVALID_MESSAGE), so the Service treats both alike.
 */
export class CommandHandlers {
  readonly #table = new Map<CommandKind, AnyCommandHandler>();

  /** Registers the handler of `kind`; a kind has one handler (its answer is the reply), so a second is refused. */
  on<K extends CommandKind>(kind: K, handler: CommandHandler<K>): this {
    if (this.#table.has(kind))
      throw new FerryError('SVC_INTERNAL', `The ${kind} command has a handler already.`, {
        details: { command: kind },
      });
    this.#table.set(kind, (command) =>
      isKind(command, kind) ? handler(command) : Promise.reject(noHandler(command.type)),
    );
    return this;
  }

  /** The kinds that have a handler. */
  kinds(): CommandKind[] {
    return [...this.#table.keys()];
  }

  /** The kinds of the command table that have none. */
  missing(): CommandKind[] {
    return (Object.keys(COMMANDS) as CommandKind[]).filter((kind) => !this.#table.has(kind));
  }

  /** Runs the handler of the command's kind; rejects with CHN_INVALID_MESSAGE when it has none. */
  dispatch(command: ServiceRequest): Promise<unknown> {
    const handler = this.#table.get(command.type);
    return handler ? handler(command) : Promise.reject(noHandler(command.type));
  }
}
