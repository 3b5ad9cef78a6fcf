import fs from 'node:fs/promises';
import path from 'node:path';
import { ConnectorManifest } from '../protocol/connector-manifest.js';
import { FerryError } from '../errors/ferry-error.js';

export const MANIFEST_FILE = 'manifest.json';

/**
 * Reads and checks `<folder>/manifest.json`. Every failure is a `CON_MANIFEST_INVALID` that names
 * the folder; zod issues come back as `errors` (path, message).
 */
export async function readManifest(folder: string): Promise<ConnectorManifest> {
  const file = path.join(folder, MANIFEST_FILE);
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (err) {
    throw new FerryError('CON_MANIFEST_INVALID', `The Connector folder ${folder} has no readable ${MANIFEST_FILE}.`, {
      details: { folder, errno: (err as NodeJS.ErrnoException).code },
      cause: err,
    });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new FerryError('CON_MANIFEST_INVALID', `${file} is not valid JSON.`, { details: { folder }, cause: err });
  }
  const parsed = ConnectorManifest.safeParse(json);
  if (!parsed.success) {
    const errors = parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
    throw new FerryError(
      'CON_MANIFEST_INVALID',
      `${file} is not valid: ${errors.map((e) => `${e.path || '(root)'}: ${e.message}`).join('; ')}`,
      {
        details: { folder },
        errors,
      },
    );
  }
  return parsed.data;
}

/**
 * The module file of a plugin: `main` from the manifest; when that is a `.js` file that does not
 * exist, the `.ts` beside it (running from source with tsx or vitest).
 */
export async function resolveModule(folder: string, main: string): Promise<string> {
  const file = path.resolve(folder, main);
  if (!file.startsWith(path.resolve(folder) + path.sep)) {
    throw new FerryError('CON_MANIFEST_INVALID', `The manifest's main (${main}) points outside ${folder}.`, {
      details: { folder },
    });
  }
  const candidates = file.endsWith('.js') ? [file, `${file.slice(0, -3)}.ts`] : [file];
  for (const c of candidates) {
    try {
      await fs.access(c);
      return c;
    } catch {
      // try the next candidate
    }
  }
  throw new FerryError('CON_LOAD_FAILED', `The Connector module ${main} is missing from ${folder}.`, {
    details: { folder, main },
  });
}
