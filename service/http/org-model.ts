// The Organization operations live in service/orgs/; this module only keeps the path that
// service/bootstrap.ts imports until that import names service/orgs/ directly.
export { checkDataCenter } from '../orgs/data-centers.js';
export { createOrganization } from '../orgs/organizations.js';
