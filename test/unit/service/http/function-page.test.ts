import { describe, expect, it } from 'vitest';
import { FORMULA_FUNCTIONS, type FormulaFunction } from '../../../../src/maps/formula/catalogue.js';
import { escapeHtml, functionPage } from '../../../../service/http/function-page.js';

describe('the formula function description page', () => {
  it('escapes the five HTML-special characters', () => {
    expect(escapeHtml(`<a href="x">'&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
  });

  it('escapes every text it shows', () => {
    const hostile: FormulaFunction = {
      ...(FORMULA_FUNCTIONS[0] as FormulaFunction),
      name: '<script>alert(1)</script>',
      signature: 'X("<img src=x onerror=alert(1)>")',
      description: 'a & b < c',
      examples: [{ formula: '"</td><script>"', result: '<b>', given: { fields: { 'A.B': '<i>' } } }],
    };
    const html = functionPage(hostile);
    expect(html).not.toMatch(/<script|<img|<b>|<i>|<\/td><script/);
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).toContain('a &amp; b &lt; c');
  });

  it('shows the signature, description and every example of a function', () => {
    const fn = FORMULA_FUNCTIONS.find((f) => f.name === 'SUBSTITUTE') as FormulaFunction;
    const html = functionPage(fn);
    expect(html).toMatch(/^<!DOCTYPE html>/);
    expect(html).toContain(escapeHtml(fn.signature));
    expect(html).toContain(escapeHtml(fn.description));
    for (const e of fn.examples) expect(html).toContain(escapeHtml(e.formula));
  });
});
