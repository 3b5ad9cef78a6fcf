// @ts-check
/**
 * No import cycles, type imports included. `import-x/no-cycle` skips `import type`: a cycle of
 * types still ties two modules together (neither can be read, moved or tested without the other),
 * so this rule follows every import a file makes: values, types, re-exports and `import()`.
 *
 * The files an import leads to are scanned with TypeScript's pre-processor and resolved as tsc
 * resolves them (tsconfig.json), once per file and change; packages are not followed.
 */
import fs from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import ts from 'typescript';

/** @type {ts.CompilerOptions | undefined} */
let compilerOptions;
/** @type {ts.ModuleResolutionCache | undefined} */
let resolutionCache;
/** Per scanned file: its modification time and the repository files it imports (path → specifier). */
const scanned = new Map();

/** @param {string} file */
function options(file) {
  if (compilerOptions) return compilerOptions;
  const configFile = ts.findConfigFile(path.dirname(file), (f) => ts.sys.fileExists(f));
  const parsed = configFile
    ? ts.getParsedCommandLineOfConfigFile(
        configFile,
        {},
        { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined },
      )
    : undefined;
  compilerOptions = parsed?.options ?? {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
  };
  resolutionCache = ts.createModuleResolutionCache(process.cwd(), (f) => f, compilerOptions);
  return compilerOptions;
}

/**
 * The repository file `specifier` names from `from`, or undefined (a package, or nothing found).
 * @param {string} specifier
 * @param {string} from
 * @returns {string | undefined}
 */
function resolve(specifier, from) {
  const { resolvedModule } = ts.resolveModuleName(specifier, from, options(from), ts.sys, resolutionCache);
  if (!resolvedModule || resolvedModule.isExternalLibraryImport) return undefined;
  return path.resolve(resolvedModule.resolvedFileName);
}

/**
 * The repository files `file` imports, each with the specifier that names it.
 * @param {string} file
 * @param {string} [text] the file's text, when the linter holds it (it may differ from the disk)
 * @returns {Map<string, string>}
 */
function importsOf(file, text) {
  const mtime = text === undefined ? fs.statSync(file, { throwIfNoEntry: false })?.mtimeMs : undefined;
  const hit = scanned.get(file);
  if (hit && text === undefined && hit.mtime === mtime) return hit.imports;
  const source = text ?? (mtime === undefined ? '' : fs.readFileSync(file, 'utf8'));
  /** @type {Map<string, string>} */
  const imports = new Map();
  for (const { fileName } of ts.preProcessFile(source, true, true).importedFiles) {
    const target = resolve(fileName, file);
    if (target && target !== file && !imports.has(target)) imports.set(target, fileName);
  }
  if (text === undefined) scanned.set(file, { mtime, imports });
  return imports;
}

/**
 * The specifiers leading from `start` back to `file`, or undefined when no path does (breadth
 * first: the shortest cycle is the one reported).
 * @param {string} start
 * @param {string} file
 * @returns {string[] | undefined}
 */
function routeBack(start, file) {
  /** @type {Map<string, string[]>} */
  const seen = new Map([[start, []]]);
  const queue = [start];
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
    const route = /** @type {string[]} */ (seen.get(next));
    for (const [target, specifier] of importsOf(next)) {
      if (target === file) return [...route, specifier];
      if (seen.has(target)) continue;
      seen.set(target, [...route, specifier]);
      queue.push(target);
    }
  }
  return undefined;
}

/** @type {import('eslint').Rule.RuleModule} */
export const noImportCycle = {
  meta: {
    type: 'problem',
    docs: { description: 'Forbid an import (of values or of types) that leads back to the importing module.' },
    schema: [],
    messages: { cycle: 'Dependency cycle (type imports count) via {{route}}.' },
  },
  create(context) {
    const file = path.resolve(context.physicalFilename);
    if (!fs.existsSync(file)) return {};
    const own = importsOf(file, context.sourceCode.text);
    /** @param {import('estree').Node} node @param {unknown} source */
    const check = (node, source) => {
      if (typeof source !== 'string') return;
      const target = resolve(source, file);
      if (!target || !own.has(target)) return;
      const route = routeBack(target, file);
      if (route) context.report({ node, messageId: 'cycle', data: { route: [source, ...route].join(' → ') } });
    };
    return {
      ImportDeclaration: (node) => check(node, node.source.value),
      ExportNamedDeclaration: (node) => check(node, node.source?.value),
      ExportAllDeclaration: (node) => check(node, node.source.value),
      ImportExpression: (node) => check(node, node.source.type === 'Literal' ? node.source.value : undefined),
      // `import('./x.js').T` in a type (typescript-eslint's node, not in ESTree's types).
      /** @param {any} node */
      TSImportType: (node) => check(node, node.argument?.literal?.value),
    };
  },
};
