import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { MapEdits } from '../../solutions/map-edit.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf } from '../guard.js';
import {
  ChangeBlockTypeQuery,
  MapParams,
  ModelAnswer,
  OptionalModelBody,
  RenameBlockQuery,
  UpgradeBody,
} from '../schemas/map-transfer.schema.js';
import { SolutionParams } from '../schemas/solution.schema.js';

const tags = ['Maps'];

/** Edits that answer a changed Map model without saving it: upgrade, changeblocktype, renameblock (SPEC.md "Maps"). */
const mapEditRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const edits = new MapEdits({ db: deps.store.db, maps: deps.maps, metadata: deps.metadata });

  // SPEC.md spells this path with `solution`, singular.
  app.post(
    '/v1/orgs/:orgId/solution/:solutionId/maps/advanced/upgrade',
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary:
          "Upgrade a Map model (2.x, the original service's export) to 3.0 without saving it; validate, renameblock and previewquery refuse 2.0 and older",
        params: SolutionParams,
        body: UpgradeBody,
        response: { 200: ModelAnswer },
      },
    },
    async (req) => edits.upgrade(orgOf(req).org, req.params.solutionId, req.body),
  );

  app.post(
    '/v1/orgs/:orgId/solutions/:solutionId/maps/:mapId/changeblocktype',
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary:
          "Change an operation Block's kind (action + operationName, a pair the Connection's supportedactions allow); answers the changed model, not saved",
        description:
          "Works on the model in the body, or on the stored Map's latest revision when the body is empty. Save the answer with PUT …/maps/advanced/{mapId}. 404 API_METADATA_LOADING while the Connection's metadata loads: repeat the call.",
        params: MapParams,
        querystring: ChangeBlockTypeQuery,
        body: OptionalModelBody,
        response: { 200: ModelAnswer },
      },
    },
    async (req) =>
      edits.changeBlockType(req.log, orgOf(req).org, req.params.solutionId, req.params.mapId, req.query, req.body),
  );

  app.post(
    '/v1/orgs/:orgId/solutions/:solutionId/maps/:mapId/renameblock',
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary:
          'Rename a Block; every formula reading OldName.Field then reads NewName.Field; answers the changed model, not saved',
        description:
          "Works on the model in the body, or on the stored Map's latest revision when the body is empty. A body model of version 2.0 or older is refused: upgrade it first with …/maps/advanced/upgrade. Save the answer with PUT …/maps/advanced/{mapId}.",
        params: MapParams,
        querystring: RenameBlockQuery,
        body: OptionalModelBody,
        response: { 200: ModelAnswer },
      },
    },
    async (req) => edits.renameBlock(orgOf(req).org, req.params.solutionId, req.params.mapId, req.query, req.body),
  );
};

export default mapEditRoutes;
