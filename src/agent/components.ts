import type { Logger } from 'pino';

/**
 * A part of a process with a lifetime. `start` is synchronous: the process is up when it returns.
 * `stop` may be asynchronous; it is called whether or not `start` was (a process refused before
 * it started still closes what it opened).
 */
export interface Component {
  /** Names the component in the log when its stop fails. */
  readonly name: string;
  start?(): void;
  stop?(): void | Promise<void>;
}

/** A stop that threw or rejected. */
export interface ComponentStopFailure {
  readonly name: string;
  readonly err: unknown;
}

/**
 * An ordered list of components: started in the order added, stopped in the reverse order, so
 * nothing stops before a component that uses it. A component that fails to stop is logged and
 * returned, and the ones after it still stop. A stop that returns nothing runs in the same turn as
 * the one before it, so consecutive synchronous stops leave no gap for a callback to run in.
 */
export class Components {
  readonly #list: Component[] = [];
  readonly #log: Pick<Logger, 'warn'>;
  #stopping: Promise<ComponentStopFailure[]> | undefined;

  constructor(log: Pick<Logger, 'warn'>) {
    this.#log = log;
  }

  /** Appends components, in the order they start. */
  add(...components: Component[]): this {
    this.#list.push(...components);
    return this;
  }

  /** Starts each component in order; a start that throws stops the sequence and throws. */
  start(): void {
    for (const component of this.#list) component.start?.();
  }

  /** Stops each component in reverse order, once; later calls get the same answer. */
  stop(): Promise<ComponentStopFailure[]> {
    this.#stopping ??= this.#stopAll();
    return this.#stopping;
  }

  async #stopAll(): Promise<ComponentStopFailure[]> {
    const failures: ComponentStopFailure[] = [];
    for (const component of [...this.#list].reverse()) {
      try {
        const stopping = component.stop?.();
        if (stopping !== undefined) await stopping;
      } catch (err) {
        failures.push({ name: component.name, err });
        this.#log.warn({ err, componentName: component.name }, 'component not stopped cleanly');
      }
    }
    return failures;
  }
}
