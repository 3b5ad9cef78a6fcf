import { builtInConnectors } from '../../service/marketplace/catalogue.js';

/** How many Connectors a Service offers every Organization: the built-in plugins of `connectors/`. */
export const BUILT_IN_CONNECTORS = builtInConnectors().all().length;
