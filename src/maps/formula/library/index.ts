/**
 * The function library as source text for the sandbox (host side).
 *
 * Each library file exports a self-contained installer; the sandbox receives them as text through
 * `Function.prototype.toString`, which gives whatever JavaScript the module was loaded as — the
 * tsc output under `dist/`, esbuild's under tsx and vitest. So the library needs no build step of
 * its own and always matches the code the tests ran. esbuild's `keepNames` wraps functions in
 * `__name(fn, "name")`; the sandbox defines `__name` as the identity for that reason.
 */
import { installConversion } from './conversion.js';
import { installCore } from './core.js';
import { installDateFormat } from './date-format.js';
import { installDateTime } from './datetime.js';
import { installLookup } from './lookup.js';
import { installMath } from './math.js';
import { installMisc } from './misc.js';
import { installNumberFormat } from './number-format.js';
import { installText } from './text.js';
import type { FormulaLibrary } from './types.js';

/** In dependency order: core first. */
export const INSTALLERS: ReadonlyArray<(L: FormulaLibrary) => void> = [
  installCore,
  installText,
  installNumberFormat,
  installMath,
  installDateTime,
  installDateFormat,
  installConversion,
  installMisc,
  installLookup,
];

/** The global name the library object has inside the sandbox. */
export const LIBRARY_GLOBAL = '__ferryFormulaLibrary';

let cached: string | undefined;

/** A script that builds the library object and binds it to the global {@link LIBRARY_GLOBAL}. */
export function librarySource(): string {
  cached ??= [
    '"use strict";',
    `const ${LIBRARY_GLOBAL} = (() => {`,
    '  const L = Object.create(null);',
    ...INSTALLERS.map((install) => `  (${install.toString()})(L);`),
    '  Object.freeze(L.fn);',
    '  return L;',
    '})();',
  ].join('\n');
  return cached;
}
