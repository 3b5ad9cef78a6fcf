import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { FerryError } from '../../../src/errors/ferry-error.js';
import { SolutionClones } from '../../solutions/clones.js';
import { getOrg, roleIn } from '../../store/repos/orgs.repo.js';
import type { CloneJobRow } from '../../store/schema-clones.js';
import type { ServiceDeps } from '../deps.js';
import { assertApiAccess, orgOf, userName } from '../guard.js';
import { decimal, Guid, MAX_INT, qbool, Timestamp } from '../schemas/common.js';
import { SolutionParams } from '../schemas/solution.schema.js';

const tags = ['Solutions'];

/** SPEC.md "Clone job". */
const CloneJob = z
  .object({
    id: z.string(),
    clonedSolutionId: z.string().describe('the copy (the new Solution), not the job; it exists once the job succeeded'),
    creationDate: Timestamp,
    isComplete: z.boolean(),
    hasError: z.boolean(),
    message: z.string().describe('on error, every piece the destination lacks'),
  })
  .meta({ id: 'CloneJob' });

const CloneQuery = z.object({
  destOrgId: decimal(z.number().int().positive().max(MAX_INT)).describe('the Organization the copy goes to'),
  destAgentId: Guid.describe('the Agent of the destination Organization that runs the copy'),
  byReference: qbool(false).describe("a shared-resource copy: it runs the source's Maps, and neither can be edited"),
});

const toCloneJob = (job: CloneJobRow): z.infer<typeof CloneJob> => ({
  id: job.id,
  clonedSolutionId: job.clonedSolutionId,
  creationDate: job.creationDate,
  isComplete: job.isComplete === 1,
  hasError: job.hasError === 1,
  message: job.message,
});

/**
 * Copies of a Solution into an Organization the caller belongs to (SPEC.md "Solution jobs",
 * docs/solutions.md "Copies"): cloneAsync answers the job at once, clone (deprecated) when it ended.
 */
const solutionClonesRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const clones = new SolutionClones({
    db: deps.store.db,
    metadata: deps.metadata,
    log: deps.log,
    runner: deps.processId,
    shared: deps.store.dialect === 'postgres',
    assigned: (agentId) => deps.assignments.syncSoon(agentId),
  });
  app.addHook('onClose', async () => clones.settled());

  /** The caller's right to write in the destination: a member there, not Read-only, from an address it allows. */
  const destinationOf = async (userId: string, destOrgId: number, ip: string): Promise<void> => {
    const db = deps.store.db;
    const role = (await getOrg(db, destOrgId)) ? await roleIn(db, userId, destOrgId) : undefined;
    if (!role) throw new FerryError('API_NOT_FOUND', `Organization ${destOrgId} was not found.`);
    if (role === 'ReadOnly')
      throw new FerryError(
        'API_FORBIDDEN_ROLE',
        `A copy needs the Administrator or User role in the destination; you have the ReadOnly role in Organization ${destOrgId}.`,
      );
    await assertApiAccess(deps, destOrgId, ip);
  };

  for (const [path, wait] of [
    ['/v1/orgs/:orgId/solutions/:solutionId/cloneAsync', false],
    ['/v1/orgs/:orgId/solutions/:solutionId/clone', true],
  ] as const) {
    app.post(
      path,
      {
        config: { access: 'write' },
        schema: {
          tags,
          summary: wait
            ? 'Deprecated: copy the Solution and answer the clone job once it ended (use cloneAsync)'
            : 'Start copying the Solution into an Organization you belong to; answers the clone job to poll',
          ...(wait ? { deprecated: true } : {}),
          params: SolutionParams,
          querystring: CloneQuery,
          response: { 200: CloneJob },
        },
      },
      async (req) => {
        const { org, user } = orgOf(req);
        await destinationOf(user.id, req.query.destOrgId, req.ip);
        const request = {
          destOrgId: req.query.destOrgId,
          destAgentId: req.query.destAgentId,
          byReference: req.query.byReference,
          by: userName(user),
        };
        const job = wait
          ? await clones.startAndWait(org.id, req.params.solutionId, request)
          : await clones.start(org.id, req.params.solutionId, request);
        return toCloneJob(job);
      },
    );
  }

  app.get(
    '/v1/orgs/:orgId/solutions/:solutionId/cloneAsync/:cloneId',
    {
      config: { access: 'read', polled: true },
      schema: {
        tags,
        summary: 'A clone job: isComplete, hasError, message, clonedSolutionId',
        params: SolutionParams.extend({ cloneId: Guid }),
        response: { 200: CloneJob },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      return toCloneJob(await clones.get(org.id, req.params.solutionId, req.params.cloneId));
    },
  );
};

export default solutionClonesRoutes;
