import type { FastifyInstance } from 'fastify';
import { FerryError } from '../../src/errors/ferry-error.js';
import type { Db } from '../store/sql.js';
import type { SolutionRow } from '../store/schema.js';

/**
 * Shared-resource Solutions (SPEC.md "Shared-resource cloning", docs/solutions.md "Copies by
 * reference"): a by-reference copy (a target, `shared_from` set) runs its source's Maps; a Solution
 * some target names is a source. Neither can be edited (but the source's name) nor disabled, and
 * condition 13 lists the calls each may not make: they answer 409 here, before any route runs.
 */
export type SharedRole = 'source' | 'target';

/** Who may make a call: neither shared role, only sources (and ordinary Solutions), only targets (and ordinary ones). */
export type SharedRule = 'neither' | 'notTarget' | 'notSource';

const S = '/v1/orgs/:orgId/solutions/:solutionId';
const M = `${S}/maps/:mapId`;
const H = `${S}/history`;

/** SPEC.md condition 13, by method and route. */
export const SHARED_RULES: ReadonlyMap<string, SharedRule> = new Map<string, SharedRule>([
  [`PUT ${S}/schedule`, 'neither'],
  [`POST ${S}/prepare`, 'neither'],
  [`POST ${S}/clone`, 'neither'],
  [`POST ${H}/:id/mark`, 'neither'],
  [`POST ${H}/:historyId/errors/:id/mark`, 'neither'],
  [`POST ${H}/:id/reprocess`, 'neither'],
  [`POST ${H}/:historyId/:id/reprocess`, 'neither'],
  [`POST ${S}/maps/advanced`, 'neither'],
  [`PUT ${S}/maps/advanced/:mapId`, 'neither'],
  [`DELETE ${M}`, 'neither'],
  [`POST ${M}/changeblocktype`, 'neither'],
  [`POST ${M}/clone`, 'neither'],
  [`PUT ${M}/enable`, 'neither'],
  [`PUT ${M}/lock`, 'neither'],
  [`POST ${M}/renameblock`, 'neither'],
  [`POST ${M}/revert`, 'neither'],
  [`POST ${M}/validateformula`, 'neither'],
  [`POST ${M}/validate`, 'neither'],
  [`POST ${M}/previewquery`, 'neither'],
  [`POST ${M}/nativequerytest`, 'neither'],
  [`GET ${M}/nativequerytest`, 'neither'],
  [`POST ${M}/run`, 'neither'],
  [`POST ${S}/maps/import`, 'neither'],
  [`POST ${S}/maps/export`, 'neither'],
  [`GET ${S}/maps/export/:exportId`, 'neither'],
  ['POST /v1/orgs/:orgId/solution/:solutionId/maps/advanced/upgrade', 'neither'],
  [`PUT ${S}`, 'notTarget'],
  [`POST ${S}/cloneAsync`, 'notTarget'],
  [`GET ${S}/maps`, 'notTarget'],
  [`GET ${M}`, 'notTarget'],
  [`GET ${M}/revisions`, 'notTarget'],
  [`GET ${S}/maplinks/:mapId`, 'notTarget'],
  [`POST ${S}/start`, 'notSource'],
  [`POST ${S}/commands/start`, 'notSource'],
]);

/** Whether the Solution is a shared-resource source or target; undefined for an ordinary one. */
export async function sharedRoleOf(
  db: Db,
  solution: Pick<SolutionRow, 'id' | 'sharedFrom'>,
): Promise<SharedRole | undefined> {
  if (solution.sharedFrom) return 'target';
  const target = await db.selectFrom('solutions').select('id').where('sharedFrom', '=', solution.id).executeTakeFirst();
  return target ? 'source' : undefined;
}

/** The by-reference copies of a source: their IDs and Organizations. */
export async function targetsOf(db: Db, sourceId: string): Promise<Array<{ id: string; orgId: number; name: string }>> {
  return db
    .selectFrom('solutions')
    .select(['id', 'orgId', 'name'])
    .where('sharedFrom', '=', sourceId)
    .orderBy('orgId')
    .execute();
}

/** The 409 of a call a shared-resource Solution may not make. */
export function sharedConflict(role: SharedRole, name: string, what: string): FerryError {
  return new FerryError(
    'API_CONFLICT',
    role === 'target'
      ? `Solution "${name}" is a by-reference copy: it runs its source's Maps and ${what}. Change the source's definition by the update flow (docs/solutions.md "Copies by reference").`
      : `Solution "${name}" is the source of by-reference copies: ${what}. To change it, rename it, create a new Solution with its name and copy that by reference again.`,
  );
}

/** Answers 409 to the calls SPEC.md condition 13 leaves out for shared-resource Solutions. */
export function registerSharedGuard(app: FastifyInstance, db: Db): void {
  app.addHook('preHandler', async (req) => {
    const rule = SHARED_RULES.get(`${req.method} ${req.routeOptions.url ?? ''}`);
    if (!rule) return;
    const params = req.params as { orgId?: number | string; solutionId?: string };
    if (params.solutionId === undefined || params.orgId === undefined) return;
    // One statement: the Solution, and whether a target names it.
    const solution = await db
      .selectFrom('solutions as s')
      .select((eb) => [
        's.name',
        's.sharedFrom',
        eb.exists(eb.selectFrom('solutions as t').select('t.id').whereRef('t.sharedFrom', '=', 's.id')).as('isSource'),
      ])
      .where('s.orgId', '=', Number(params.orgId))
      .where('s.id', '=', String(params.solutionId).toLowerCase())
      .executeTakeFirst();
    if (!solution) return;
    const role: SharedRole | undefined = solution.sharedFrom ? 'target' : solution.isSource ? 'source' : undefined;
    if (!role) return;
    const call = `${req.method} ${req.routeOptions.url ?? ''}`.replace('/v1/orgs/:orgId/solutions/:solutionId', 'S');
    if (rule === 'neither' || (rule === 'notTarget' && role === 'target'))
      throw sharedConflict(role, solution.name, `${call} is not available for it`);
    if (rule === 'notSource' && role === 'source')
      throw sharedConflict(role, solution.name, `${call} is only for its by-reference copies, which run it`);
  });
}
