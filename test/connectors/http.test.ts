import { runConformance } from './conformance.js';
import { HTTP_CONNECTOR, PeopleApi, peopleDefinition, serve } from './http-api.js';

/**
 * The conformance suite against a REST API on loopback ({@link PeopleApi}): pages of 25 people,
 * Create in batches of 500 with a result per record, Update by PATCH, Upsert by PUT, Delete by key.
 * An HTTP API has no native statements and no tables to create: nativeQuery and ensureEntity are
 * left out (the suite then checks that both are refused as unsupported).
 */
const apis = new Map<string, PeopleApi>();

runConformance({
  connector: HTTP_CONNECTOR,
  async setup() {
    const api = new PeopleApi();
    const server = await serve(api.handle);
    apis.set(server.url, api);
    return {
      properties: { baseUrl: server.url, definition: peopleDefinition(), retryDelayMs: '10' },
      cleanup: () => server.close(),
    };
  },
  async createLarge(properties, rows) {
    (apis.get(properties['baseUrl'] as string) as PeopleApi).bigRows = rows;
    return Promise.resolve();
  },
  // The API answers 409 per record of a batch for a key it holds.
  enforcesUniqueKeys: true,
  ensureEntity: false,
  interrupt: {
    // The API drops every connection while the write runs: a POST that may have arrived is not sent
    // again, so the call fails as a whole (CON_UNREACHABLE) and nothing of it was stored.
    async during(properties, write) {
      const api = apis.get(properties['baseUrl'] as string) as PeopleApi;
      api.down = true;
      try {
        const [outcome] = await Promise.allSettled([write()]);
        return outcome;
      } finally {
        api.down = false;
      }
    },
  },
});
