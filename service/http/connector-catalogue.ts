import fs from 'node:fs';
import path from 'node:path';
import { FerryError } from '../../src/errors/ferry-error.js';
import { ConnectorManifest, protectedProperties } from '../../src/protocol/connector-manifest.js';
import { packageRoot } from '../util/package-root.js';
import type { Connector, UiOptions } from './schemas/connection.schema.js';

/** The exact message of SPEC.md for uioptions on a Connector with its own user interface. */
export const NO_GENERIC_UI = 'The connector type does not support getting generic UI Elements.';
export const GENERIC_UI = 'SvcOnline.GenericConnectionUI';

/**
 * The Connectors the Service knows: the manifests of the built-in plugins in `connectors/`, read
 * once and checked with the manifest schema (src/protocol/connector-manifest.ts). The Agent's
 * plugin host loads the same folders; a Marketplace adds more later.
 */
export class ConnectorCatalogue {
  readonly #byId = new Map<string, ConnectorManifest>();

  constructor(manifests: readonly ConnectorManifest[]) {
    for (const m of manifests) this.#byId.set(m.id.toLowerCase(), m);
  }

  /** Reads `<dir>/<folder>/manifest.json` of every folder; a folder without a valid manifest is skipped. */
  static fromDir(dir: string = path.join(packageRoot(), 'connectors')): ConnectorCatalogue {
    const manifests: ConnectorManifest[] = [];
    let names: string[] = [];
    try {
      names = fs.readdirSync(dir).sort();
    } catch {
      return new ConnectorCatalogue([]);
    }
    for (const name of names) {
      try {
        const parsed = ConnectorManifest.safeParse(JSON.parse(fs.readFileSync(path.join(dir, name, 'manifest.json'), 'utf8')));
        if (parsed.success) manifests.push(parsed.data);
      } catch {
        // not a plugin folder
      }
    }
    return new ConnectorCatalogue(manifests);
  }

  all(): ConnectorManifest[] {
    return [...this.#byId.values()].sort((a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id));
  }

  get(id: string): ConnectorManifest | undefined {
    return this.#byId.get(id.toLowerCase());
  }

  require(id: string): ConnectorManifest {
    const m = this.get(id);
    if (!m) throw new FerryError('API_NOT_FOUND', `Connector ${id} was not found.`);
    return m;
  }
}

let shared: ConnectorCatalogue | undefined;
/** The catalogue of the built-in Connectors, read at first use. */
export function builtInConnectors(): ConnectorCatalogue {
  shared ??= ConnectorCatalogue.fromDir();
  return shared;
}

export function toConnector(m: ConnectorManifest): Connector {
  return {
    id: m.id,
    name: m.name,
    description: m.description,
    vendorName: m.vendor,
    companyName: m.vendor,
    version: m.version,
    isCloudSupported: m.isCloudSupported,
    connectionLimitReached: false,
    uiName: m.uiName,
    uiVersion: m.uiVersion ?? m.version,
    solutionRoles: m.solutionRoles,
  };
}

export function toUiOptions(m: ConnectorManifest): UiOptions {
  if (m.uiName !== GENERIC_UI) throw new FerryError('API_UNSUPPORTED', NO_GENERIC_UI);
  return {
    helpURL: m.helpUrl ?? null,
    uiDecorations: m.uiDecorations.map((d, i) => ({
      propertyName: d.propertyName,
      label: d.label,
      inputType: d.inputType,
      isRequired: d.isRequired,
      order: d.order ?? i,
      options: d.options ?? [],
      ...(d.defaultValue !== undefined ? { defaultValue: d.defaultValue } : {}),
      ...(d.description !== undefined ? { description: d.description } : {}),
    })),
  };
}

/** Lower-cased names of the Connector's protected (Password) properties. */
export function protectedKeys(m: ConnectorManifest): Set<string> {
  return new Set(protectedProperties(m).map((p) => p.toLowerCase()));
}
