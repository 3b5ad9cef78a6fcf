/**
 * Miscellaneous functions. Runs INSIDE the sandbox: the installer refers only to `L` and
 * JavaScript built-ins (see core.ts).
 *
 * IF, IFERROR, COALESCE, CHOOSE and SWITCH evaluate only the arguments they need, so the compiler
 * writes them inline (compiler.ts, SPECIAL_FORMS); they have no entry here.
 */
import type { FormulaLibrary, FValue } from './types.js';

export function installMisc(L: FormulaLibrary): void {
  const F = L.fn;
  F.ISNULL = (v: FValue): boolean => v === null;
  F.ISNULLOREMPTY = (v: FValue): boolean => v === null || v === '';
  F.ISBLANK = (v: FValue): boolean => v === null || (typeof v === 'string' && v.trim() === '');
  F.ISNULLORDEFAULT = (v: FValue): boolean => v === null || v === '' || v === 0 || v === false;
  F.NULLIF = (a: FValue, b: FValue): FValue =>
    L.eq(a, b) ? null : typeof a === 'string' ? L.checkText(a, 'NULLIF') : a;
  // A version 4 GUID from the batch's generator, which the host seeds from its crypto source.
  F.NEWGUID = (): string => {
    let hex = '';
    for (let i = 0; i < 4; i++) hex += L.random32().toString(16).padStart(8, '0');
    const variant = ((parseInt(hex.charAt(16), 16) & 0x3) | 0x8).toString(16);
    return L.checkText(
      `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`,
      'NEWGUID',
    );
  };
}
