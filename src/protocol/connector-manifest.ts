import { z } from 'zod';

/**
 * `connectors/<folder>/manifest.json`: what a Connector plugin declares about itself, read and
 * checked before any of its code runs. The Service shows these fields as the Connector resource
 * (SPEC.md "Connector"); the Agent's plugin host checks `sdkVersion` / `agentVersion` and loads
 * `main`.
 */

export const SOLUTION_ROLES = [
  'Svc.IS2.Source',
  'Svc.IS2.Target',
  'Svc.RS.Source',
  'Svc.RS.Target',
  'Svc.MS2.Source',
  'Svc.MS2.Target',
] as const;
export const SolutionRole = z.enum(SOLUTION_ROLES);
export type SolutionRole = z.infer<typeof SolutionRole>;

/** Input kinds of the generic connection form. `Password` marks a protected property: never logged, never returned decrypted. */
export const INPUT_TYPES = ['Text', 'Password', 'Number', 'Boolean', 'PickList', 'TextArea'] as const;
export type InputType = (typeof INPUT_TYPES)[number];

const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;
/** A version range of the forms `1.2.3`, `^1.2.0`, `~1.2.0`, `>=1.0.0 <2.0.0`, joined by `||`. */
const RANGE =
  /^\s*(?:(?:\^|~|>=|<=|>|<|=)?\s*\d+(?:\.\d+){0,2}(?:-[0-9A-Za-z.-]+)?\s*)+(?:\|\|\s*(?:(?:\^|~|>=|<=|>|<|=)?\s*\d+(?:\.\d+){0,2}(?:-[0-9A-Za-z.-]+)?\s*)+)*$/;

export const UiDecoration = z.strictObject({
  propertyName: z.string().min(1).max(100),
  label: z.string().min(1).max(200),
  inputType: z.enum(INPUT_TYPES).default('Text'),
  isRequired: z.boolean().default(false),
  /** Position in the form; default is the order of entry. */
  order: z.number().int().min(0).optional(),
  /** Pick list entries (`PickList`). */
  options: z
    .array(z.strictObject({ key: z.string().max(200), value: z.string().max(200) }))
    .max(500)
    .optional(),
  defaultValue: z.string().max(1000).optional(),
  description: z.string().max(2000).optional(),
});
export type UiDecoration = z.infer<typeof UiDecoration>;

export const ConnectorManifest = z
  .strictObject({
    $schema: z.string().optional(),
    /** The Connector's GUID, stable across versions. */
    id: z.guid(),
    /** Display name, also the Connection's `connectorType`. */
    name: z.string().trim().min(1).max(100),
    description: z.string().max(2000).default(''),
    vendor: z.string().trim().min(1).max(200),
    /** The plugin's own version (semver). */
    version: z.string().regex(SEMVER, 'a semantic version such as 1.2.3'),
    /** The Connector SDK versions the plugin is written against (a semver range, e.g. `^1.0.0`). */
    sdkVersion: z.string().regex(RANGE, 'a version range such as ^1.0.0'),
    /** The Agent versions the plugin runs in; absent = any. */
    agentVersion: z.string().regex(RANGE, 'a version range such as >=0.1.0').optional(),
    /** The module, relative to the folder; default `index.js` (`index.ts` when running from source). */
    main: z
      .string()
      .regex(
        /^(?!\/)(?!.*\.\.)[A-Za-z0-9_./-]+\.(?:js|mjs|ts)$/,
        'a relative path to a .js, .mjs or .ts file inside the folder',
      )
      .default('index.js'),
    solutionRoles: z.array(SolutionRole).min(1),
    isCloudSupported: z.boolean(),
    /** `SvcOnline.GenericConnectionUI` (the form below), `SvcOnline.Views.OAuthConnectionUI`, or a Connector-specific UI. */
    uiName: z.string().min(1).max(200).default('SvcOnline.GenericConnectionUI'),
    uiVersion: z.string().max(50).optional(),
    helpUrl: z.url().optional(),
    /** Most records the plugin accepts in one `write` and returns in one query batch. */
    bulkLimit: z.number().int().min(1).max(100_000).default(2000),
    uiDecorations: z.array(UiDecoration).max(200),
    /** Marketplace: false for a Managed Connector (only Organizations its vendor granted it to see it). */
    isPublic: z.boolean().default(true),
    /** Marketplace: a hotfix version, which only the vendor can lock. */
    isHotFix: z.boolean().default(false),
    isFree: z.boolean().default(true),
    link: z.url().optional(),
    logoUrl: z.url().optional(),
    contactUrl: z.url().optional(),
    /** ISO date the vendor's Connector was certified. */
    certificationDate: z.iso.date().optional(),
  })
  .superRefine((m, ctx) => {
    const seen = new Set<string>();
    m.uiDecorations.forEach((d, i) => {
      const key = d.propertyName.toLowerCase();
      if (seen.has(key))
        ctx.addIssue({
          code: 'custom',
          path: ['uiDecorations', i, 'propertyName'],
          message: `duplicate property ${d.propertyName}`,
        });
      seen.add(key);
      if (d.inputType === 'PickList' && !d.options?.length) {
        ctx.addIssue({ code: 'custom', path: ['uiDecorations', i, 'options'], message: 'a PickList needs options' });
      }
    });
  });
export type ConnectorManifest = z.infer<typeof ConnectorManifest>;

/** Names of the protected properties (inputType Password) of a manifest. */
export function protectedProperties(manifest: Pick<ConnectorManifest, 'uiDecorations'>): string[] {
  return manifest.uiDecorations.filter((d) => d.inputType === 'Password').map((d) => d.propertyName);
}
