import fs from 'node:fs/promises';
import path from 'node:path';
import { build } from 'esbuild';
import { resolveModule } from '../../src/connectors/manifest.js';
import { packFiles, sha256, PACKAGED_MAIN } from '../../src/connectors/package.js';
import { FerryError } from '../../src/errors/ferry-error.js';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../store/data-dir.js';
import { packageRoot } from '../util/package-root.js';
import type { ConnectorCatalogue } from './catalogue.js';

/** One installable package of a Connector version. */
export interface ConnectorPackage {
  connectorId: string;
  version: string;
  file: string;
  sha256: string;
  size: number;
}

/**
 * The installable packages of the catalogue's Connectors, kept under `<dir>/<connectorId>/<version>.tgz`.
 *
 * A package is the plugin's module bundled by esbuild into one ESM file (`index.mjs`: the plugin
 * and the SDK helpers it imports) plus its manifest. Ferry's own runtime dependencies (pg,
 * better-sqlite3, csv-parse, zod, …) stay imports: the Agent provides them (docs/connectors.md
 * "Packages"). The current version of each Connector is built from its folder at first use in a
 * Service process; packages of earlier versions stay in the folder, so that an Organization that
 * locked one can still install it on a new Agent.
 */
export class PackageStore {
  readonly #built = new Map<string, Promise<ConnectorPackage>>();

  constructor(
    private readonly catalogue: ConnectorCatalogue,
    private readonly dir: string,
  ) {}

  /** The package of `version` (default: the catalogue's current one); CON_PACKAGE_UNAVAILABLE if there is none. */
  async get(connectorId: string, version?: string): Promise<ConnectorPackage> {
    const m = this.catalogue.require(connectorId);
    const wanted = version ?? m.version;
    if (wanted === m.version) {
      const key = `${m.id.toLowerCase()}@${m.version}`;
      let p = this.#built.get(key);
      if (!p) {
        p = this.#build(m.id).catch((err: unknown) => {
          this.#built.delete(key);
          throw err;
        });
        this.#built.set(key, p);
      }
      return p;
    }
    const file = this.#file(m.id, wanted);
    try {
      const data = await fs.readFile(file);
      return { connectorId: m.id, version: wanted, file, sha256: sha256(data), size: data.length };
    } catch {
      throw new FerryError(
        'CON_PACKAGE_UNAVAILABLE',
        `Version ${wanted} of the ${m.name} connector is not available on this Service (the current version is ${m.version}).`,
        {
          details: { connectorId: m.id, version: wanted },
        },
      );
    }
  }

  /** Resolves once no build of this store is running: a closing Service waits, so nothing writes into its data folder after it has closed. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.#built.values()]);
  }

  #file(connectorId: string, version: string): string {
    return path.join(this.dir, connectorId.toLowerCase(), `${version}.tgz`);
  }

  async #build(connectorId: string): Promise<ConnectorPackage> {
    const m = this.catalogue.require(connectorId);
    const folder = this.catalogue.folderOf(connectorId);
    if (!folder)
      throw new FerryError('CON_PACKAGE_UNAVAILABLE', `The ${m.name} connector has no plugin folder to package.`, {
        details: { connectorId: m.id },
      });
    const entry = await resolveModule(folder, m.main);
    let code: string;
    try {
      const out = await build({
        entryPoints: [entry],
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: 'node20',
        write: false,
        logLevel: 'silent',
        legalComments: 'none',
        external: await sharedDependencies(),
        banner: {
          js: "import { createRequire as __ferryCreateRequire } from 'node:module'; const require = __ferryCreateRequire(import.meta.url);",
        },
      });
      code = out.outputFiles[0]?.text ?? '';
    } catch (err) {
      throw new FerryError(
        'CON_PACKAGE_UNAVAILABLE',
        `The ${m.name} connector could not be packaged: ${err instanceof Error ? err.message : String(err)}`,
        {
          details: { connectorId: m.id },
          cause: err,
        },
      );
    }
    const manifest = JSON.parse(await fs.readFile(path.join(folder, 'manifest.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    const tgz = packFiles([
      {
        name: 'manifest.json',
        data: Buffer.from(`${JSON.stringify({ ...manifest, main: PACKAGED_MAIN }, null, 2)}\n`),
      },
      { name: PACKAGED_MAIN, data: Buffer.from(code) },
    ]);
    const file = this.#file(m.id, m.version);
    await fs.mkdir(path.dirname(file), { recursive: true, mode: PRIVATE_DIR_MODE });
    const tmp = `${file}.${process.pid}.tmp`;
    await fs.writeFile(tmp, tgz, { mode: PRIVATE_FILE_MODE });
    await fs.rename(tmp, file);
    return { connectorId: m.id, version: m.version, file, sha256: sha256(tgz), size: tgz.length };
  }
}

let shared: Promise<string[]> | undefined;
/** Ferry's runtime dependencies (and their sub-paths): what a package imports instead of bundling. */
function sharedDependencies(): Promise<string[]> {
  shared ??= fs.readFile(path.join(packageRoot(), 'package.json'), 'utf8').then((text) => {
    const names = Object.keys((JSON.parse(text) as { dependencies?: Record<string, string> }).dependencies ?? {});
    return [...names, ...names.map((n) => `${n}/*`), 'pg-native'];
  });
  return shared;
}
