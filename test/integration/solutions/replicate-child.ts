/**
 * A replication in a process of its own, for the crash test: it copies the entities named on the
 * command line and is killed (SIGKILL) part-way by the test, which then runs the copy again.
 *
 *   node --import tsx replicate-child.ts <args JSON>
 *   args: { sourceFile, target: { connector, properties }, stateDir, entities, batchSize }
 */
import { FileReplicationState } from '../../../src/solutions/replicate.js';
import { open, run } from './replicate-helpers.js';

interface Args {
  sourceFile: string;
  target: { connector: string; properties: Record<string, string> };
  stateDir: string;
  entities: string[];
  batchSize: number;
}

const args = JSON.parse(process.argv[2] ?? '{}') as Args;
const conns = await open(args.sourceFile, args.target);
// Slows each batch a little so that the test sees the copy part-way through before it ends.
await run(conns, new FileReplicationState(args.stateDir), args.entities, {
  batchSize: args.batchSize,
  onProgress: () => {
    const until = Date.now() + 20;
    while (Date.now() < until);
  },
});
await conns.close();
