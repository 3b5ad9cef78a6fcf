import type { FormulaFunction, JsonValue } from '../../src/maps/formula/catalogue.js';

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text made safe for HTML element content and attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ENTITIES[c] ?? c);
}

/** An example result as a formula author would write it: text quoted, null as null. */
function showResult(value: JsonValue): string {
  return JSON.stringify(value);
}

/**
 * The public description page of one formula function (the Function model's descriptionURL): a
 * small self-contained HTML document with no scripts and no external resources; every catalogue
 * text is escaped.
 */
export function functionPage(fn: FormulaFunction): string {
  const examples = fn.examples
    .map((e) => {
      const given = e.given ? `<div class="given">given ${escapeHtml(JSON.stringify(e.given))}</div>` : '';
      return `<tr><td><code>${escapeHtml(e.formula)}</code>${given}</td><td><code>${escapeHtml(showResult(e.result))}</code></td></tr>`;
    })
    .join('\n');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(fn.name)} — Ferry formula function</title>
<style>
body{font-family:system-ui,sans-serif;max-width:48rem;margin:2rem auto;padding:0 1rem;line-height:1.5;color:#1b1b1b}
code{font-family:ui-monospace,monospace;background:#f3f3f3;padding:0 .2em}
table{border-collapse:collapse;width:100%}th,td{border:1px solid #ddd;padding:.4rem;text-align:left;vertical-align:top}
.meta{color:#555}.given{color:#555;font-size:.85em;margin-top:.2rem}
</style>
</head>
<body>
<h1>${escapeHtml(fn.name)}</h1>
<p class="meta">Category: ${escapeHtml(fn.category)} · Returns: ${escapeHtml(fn.returns)}</p>
<h2>Syntax</h2>
<p><code>${escapeHtml(fn.signature)}</code></p>
<h2>Description</h2>
<p>${escapeHtml(fn.description)}</p>
<h2>Examples</h2>
<table>
<tr><th>Formula</th><th>Result</th></tr>
${examples}
</table>
</body>
</html>
`;
}
