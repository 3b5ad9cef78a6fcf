import fs from 'node:fs';
import path from 'node:path';
import { FerryError } from '../../src/errors/ferry-error.js';
import { ConnectorManifest, protectedProperties } from '../../src/protocol/connector-manifest.js';
import { packageRoot } from '../util/package-root.js';

/** The exact message of SPEC.md for uioptions on a Connector with its own user interface. */
export const NO_GENERIC_UI = 'The connector type does not support getting generic UI Elements.';
export const GENERIC_UI = 'SvcOnline.GenericConnectionUI';

/** A Connector the Service can offer: its manifest and the plugin folder it is packaged from. */
export interface CatalogueEntry {
  manifest: ConnectorManifest;
  /** Absent for a catalogue built from manifests alone (it cannot be packaged). */
  folder?: string;
}

/**
 * The Connectors the Service knows — its Marketplace: the manifests of the built-in plugins in
 * `connectors/` and of the plugins in the operator's extra folder (FERRY_CONNECTORS_DIR: vendor
 * and private Managed Connectors), read once and checked with the manifest schema
 * (src/protocol/connector-manifest.ts). The package store builds the installable package of each
 * from its folder.
 */
export class ConnectorCatalogue {
  readonly #byId = new Map<string, CatalogueEntry>();

  constructor(entries: readonly (ConnectorManifest | CatalogueEntry)[]) {
    for (const e of entries) {
      const entry = 'manifest' in e ? e : { manifest: e };
      this.#byId.set(entry.manifest.id.toLowerCase(), entry);
    }
  }

  /**
   * Reads `<dir>/<folder>/manifest.json` of every folder of every dir; a folder without a valid
   * manifest is skipped, and a later dir's plugin with an id already seen is skipped too.
   */
  static fromDirs(dirs: readonly string[] = [builtInDir()]): ConnectorCatalogue {
    const entries: CatalogueEntry[] = [];
    const seen = new Set<string>();
    for (const dir of dirs) {
      let names: string[] = [];
      try {
        names = fs.readdirSync(dir).sort();
      } catch {
        continue;
      }
      for (const name of names) {
        const folder = path.join(dir, name);
        try {
          const parsed = ConnectorManifest.safeParse(
            JSON.parse(fs.readFileSync(path.join(folder, 'manifest.json'), 'utf8')),
          );
          if (parsed.success && !seen.has(parsed.data.id.toLowerCase())) {
            seen.add(parsed.data.id.toLowerCase());
            entries.push({ manifest: parsed.data, folder });
          }
        } catch {
          // not a plugin folder
        }
      }
    }
    return new ConnectorCatalogue(entries);
  }

  all(): ConnectorManifest[] {
    return [...this.#byId.values()]
      .map((e) => e.manifest)
      .sort((a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id));
  }

  get(id: string): ConnectorManifest | undefined {
    return this.#byId.get(id.toLowerCase())?.manifest;
  }

  /** The plugin folder of a Connector, if the catalogue was read from folders. */
  folderOf(id: string): string | undefined {
    return this.#byId.get(id.toLowerCase())?.folder;
  }

  require(id: string): ConnectorManifest {
    const m = this.get(id);
    if (!m) throw new FerryError('API_NOT_FOUND', `Connector ${id} was not found.`);
    return m;
  }
}

/** The built-in plugins: `connectors/` beside the sources, `dist/connectors/` when built. */
function builtInDir(): string {
  return path.join(packageRoot(), 'connectors');
}

let shared: ConnectorCatalogue | undefined;
/** The catalogue of the built-in Connectors, read at first use. */
export function builtInConnectors(): ConnectorCatalogue {
  shared ??= ConnectorCatalogue.fromDirs();
  return shared;
}

/** Refuses (API_UNSUPPORTED, with SPEC.md's exact message) a Connector with its own user interface instead of the generic form. */
export function requireGenericUi(m: ConnectorManifest): ConnectorManifest {
  if (m.uiName !== GENERIC_UI) throw new FerryError('API_UNSUPPORTED', NO_GENERIC_UI);
  return m;
}

/** Lower-cased names of the Connector's protected (Password) properties. */
export function protectedKeys(m: ConnectorManifest): Set<string> {
  return new Set(protectedProperties(m).map((p) => p.toLowerCase()));
}

/** The Connectors every Organization starts with: the built-in public ones. */
export function preinstalledConnectors(): Array<{ id: string; version: string }> {
  return builtInConnectors()
    .all()
    .filter((m) => m.isPublic)
    .map((m) => ({ id: m.id, version: m.version }));
}
