/** Options of {@link MemoryWatchdog}. */
export interface WatchdogOptions {
  readonly limitBytes: number;
  readonly intervalMs: number;
  /** Called once, at the first sample above the limit. */
  readonly onExceeded: (rssBytes: number) => void;
  /** Injected in tests; the process's resident set size by default. */
  readonly readRss?: () => number;
}

/**
 * Samples the resident set size every `intervalMs` and calls `onExceeded` once when it is above
 * the limit. RSS (not heap) because native memory (SQLite, drivers, isolates) counts too.
 */
export class MemoryWatchdog {
  private timer: NodeJS.Timeout | undefined;
  private fired = false;
  private readonly readRss: () => number;

  constructor(private readonly opts: WatchdogOptions) {
    this.readRss = opts.readRss ?? (() => process.memoryUsage.rss());
  }

  start(): void {
    if (this.timer || this.fired) return;
    this.timer = setInterval(() => this.sample(), this.opts.intervalMs);
    // The watchdog alone must not keep the process alive.
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Takes one sample now; returns the RSS read. */
  sample(): number {
    const rss = this.readRss();
    if (!this.fired && rss > this.opts.limitBytes) {
      this.fired = true;
      this.stop();
      this.opts.onExceeded(rss);
    }
    return rss;
  }
}
