/**
 * A continuous change-capture Replication in a process of its own, for the kill tests: it copies
 * and then applies the source's changes until the test kills it (SIGKILL).
 *
 *   node --import tsx capture-child.ts <args JSON>
 *   args: { sourceUrl, target: { connector, properties }, stateDir, entities, name, batchSize }
 */
import { captureRun, openCapture } from './capture-helpers.js';

interface Args {
  sourceUrl: string;
  target: { connector: string; properties: Record<string, string> };
  stateDir: string;
  entities: string[];
  name: string;
  batchSize: number;
}

const args = JSON.parse(process.argv[2] ?? '{}') as Args;
const conns = await openCapture(args.sourceUrl, args.target);
const r = await captureRun(conns, args.stateDir, args.entities, {
  name: args.name,
  continuous: true,
  batchSize: args.batchSize,
});
process.stderr.write(`capture child ended: ${JSON.stringify({ fatal: r.fatal, processed: r.processed })}\n`);
await conns.close();
