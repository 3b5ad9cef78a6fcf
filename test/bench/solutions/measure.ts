/** CPU and memory of what a step uses: PostgreSQL's backends, this process and the Agent's worker. */
import fs from 'node:fs';
import { procCpuMs, procRssMiB } from '../proc.js';
import { round } from './settings.js';

/**
 * CPU time of the PostgreSQL backends of one database (the server is shared with other engineers'
 * tests): every backend whose process title names the database is sampled every 250 ms, so the
 * CPU of one that exits between two samples is counted up to the last sample.
 */
export class PgCpu {
  readonly #last = new Map<number, number>();
  readonly #timer: NodeJS.Timeout;
  constructor(private readonly dbName: string) {
    this.#timer = setInterval(() => this.scan(), 250);
    this.#timer.unref();
  }
  /** Samples every backend of the database now; answers the ones alive. */
  scan(): Set<number> {
    const alive = new Set<number>();
    for (const e of fs.readdirSync('/proc')) {
      if (!/^\d+$/.test(e)) continue;
      try {
        if (fs.readFileSync(`/proc/${e}/comm`, 'utf8').trim() !== 'postgres') continue;
        if (!fs.readFileSync(`/proc/${e}/cmdline`, 'utf8').includes(` ${this.dbName} `)) continue;
        const pid = Number(e);
        this.#last.set(pid, procCpuMs(pid));
        alive.add(pid);
      } catch {
        // Gone meanwhile.
      }
    }
    return alive;
  }
  /** A meter: the backends' CPU from now until it is read. */
  meter(): () => number {
    this.scan();
    const base = new Map(this.#last);
    return () => {
      this.scan();
      let total = 0;
      for (const [pid, ms] of this.#last) total += ms - (base.get(pid) ?? 0);
      return total;
    };
  }
  close(): void {
    clearInterval(this.#timer);
  }
}
let pgCpu: PgCpu | undefined;

/** Samples the backends of the bench's database from now on; cpuMeter() reads them. */
export function watchPgCpu(dbName: string): PgCpu {
  pgCpu = new PgCpu(dbName);
  return pgCpu;
}

/** What a step used: CPU in ms, the Agent worker's memory in MiB. */
export interface StepUse {
  pgCpuMs: number;
  serviceCpuMs: number;
  agentCpuMs?: number;
  agentPeakRssMiB?: number;
  agentRssAfterMiB?: number;
}

/** CPU used meanwhile by PostgreSQL's backends, this process (the Service and the bench's polling) and the Agent's worker. */
export function cpuMeter(agentPid?: number): () => StepUse {
  const pg0 = pgCpu?.meter();
  const self0 = process.cpuUsage();
  const agent0 = agentPid ? procCpuMs(agentPid) : 0;
  // Resets the Agent's peak RSS (VmHWM), so that the peak read at the end is this step's.
  if (agentPid) fs.writeFileSync(`/proc/${agentPid}/clear_refs`, '5');
  return () => {
    const self = process.cpuUsage(self0);
    return {
      pgCpuMs: pg0 ? pg0() : 0,
      serviceCpuMs: round((self.user + self.system) / 1000),
      ...(agentPid
        ? {
            agentCpuMs: procCpuMs(agentPid) - agent0,
            agentPeakRssMiB: procRssMiB(agentPid),
            agentRssAfterMiB: procRssMiB(agentPid, 'VmRSS'),
          }
        : {}),
    };
  };
}
