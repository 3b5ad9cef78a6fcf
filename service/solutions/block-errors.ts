import type { ValidationResult } from '../../src/maps/compiler/validate.js';

/**
 * One error of a Map, as save and prepare answer it: the Block it is about (null for the Map as a
 * whole), its code (docs/errors.md) and what is wrong, without the Block's name in front (it is
 * in `blockName`).
 */
export interface BlockError {
  readonly blockId: string | null;
  readonly blockName: string | null;
  readonly code: string;
  readonly message: string;
}

/** The error findings of a validation as a list per Block, in the validator's order. */
export function blockErrorsOf(results: readonly ValidationResult[]): BlockError[] {
  return results
    .filter((r) => r.severity === 'error')
    .map((r) => ({ blockId: r.blockId, blockName: r.blockName ?? null, code: r.code, message: withoutBlockName(r) }));
}

/** A finding's message without the "Block: " the validator puts in front of most of them. */
function withoutBlockName(r: ValidationResult): string {
  const own = r.blockName ? `${r.blockName}: ` : '';
  return own && r.message.startsWith(own) ? r.message.slice(own.length) : r.message;
}

/** The errors as one line, each named by its Block once: `Block: message; Block: message`. */
export function blockErrorsText(errors: readonly BlockError[]): string {
  return errors.map((e) => (e.blockName ? `${e.blockName}: ${e.message}` : e.message)).join('; ');
}
