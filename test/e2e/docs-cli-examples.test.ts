/**
 * The `ferry` examples of README.md and docs/*.md run as real processes.
 *
 * A fenced block is an example when one of its lines runs the CLI (`ferry …`, `npx ferry …`,
 * `npx tsx src/cli/main.ts …`, with or without a `$ ` prompt). A block of `$ ` lines is a
 * transcript: each command runs and prints the lines under it (exit code 0, or non-zero when
 * they begin with an error code). Any other block runs as one bash script and exits 0. Paths
 * under /tmp/ are moved into a fresh folder, so examples run again and side by side.
 *
 * A block that needs what a test cannot give (a running Service, an Agent, root) carries an HTML
 * comment on the line before it, `<!-- example: needs-service -->` or `<!-- example: <reason> -->`,
 * and is skipped with that reason; `<!-- example: exit N -->` runs a script that ends with exit code N. Only the commands below run without one; any other command in
 * an unmarked block fails this test, so every example is either run or marked.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const exec = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');
const CLI = /(?:^\s*|[;&|(]\s*)(?:npx tsx src\/cli\/main\.ts|npx ferry|ferry)\s+(\S+)(?:\s+(\S+))?/;
/** The commands that run without a Service: `ferry <command> [<subcommand>]`. */
const OFFLINE = new Set([
  'formula eval',
  'map validate',
  'map run',
  'map failures',
  '--help',
  '--version',
  'service openapi',
]);
const MARKER = /^<!--\s*example:\s*(.+?)\s*-->$/;

interface Example {
  where: string;
  lines: string[];
  skip?: string;
  exit?: number;
}

function markdownFiles(): string[] {
  const docs = fs
    .readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => path.join('docs', f));
  return ['README.md', ...docs];
}

const stripPrompt = (l: string): string => l.replace(/^\$ /, '');

/** The fenced blocks of a Markdown file that run the CLI, with the marker before each. */
function examplesOf(file: string): Example[] {
  const lines = fs.readFileSync(path.join(ROOT, file), 'utf8').split('\n');
  const out: Example[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!/^```/.test(lines[i] as string)) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^```/.test(lines[i] as string); i++) body.push(lines[i] as string);
    if (!body.some((l) => CLI.test(stripPrompt(l)) && !/^\s*#/.test(l))) continue;
    let j = start - 1;
    while (j >= 0 && (lines[j] as string).trim() === '') j--;
    const marker = MARKER.exec((lines[j] ?? '').trim())?.[1];
    const exit = marker === undefined ? undefined : /^exit (\d+)$/.exec(marker)?.[1];
    const expect = exit !== undefined ? { exit: Number(exit) } : marker !== undefined ? { skip: marker } : {};
    out.push({ where: `${file}:${start + 1}`, lines: body, ...expect });
  }
  return out;
}

/** `ferry <command> [<subcommand>]` of each CLI call in a block. */
function commandsOf(lines: string[]): string[] {
  return lines.flatMap((l) => {
    const m = CLI.exec(stripPrompt(l));
    if (!m || /^\s*#/.test(l)) return [];
    const [, cmd, sub] = m as unknown as [string, string, string | undefined];
    return [sub && !sub.startsWith('-') ? `${cmd} ${sub}` : cmd];
  });
}

interface Step {
  command: string;
  expected: string;
}

/** A transcript's commands (a command goes on while a quote is open) and the output under each. */
function transcript(lines: string[]): Step[] {
  const steps: Step[] = [];
  for (let i = 0; i < lines.length;) {
    let command = stripPrompt(lines[i] as string);
    while (unbalanced(command) && i + 1 < lines.length) command += `\n${lines[++i] as string}`;
    const expected: string[] = [];
    for (i++; i < lines.length && !(lines[i] as string).startsWith('$ '); i++) expected.push(lines[i] as string);
    steps.push({ command, expected: expected.join('\n') });
  }
  return steps;
}

function unbalanced(command: string): boolean {
  let quote: string | undefined;
  for (const c of command) {
    if (quote) {
      if (c === quote) quote = undefined;
    } else if (c === "'" || c === '"') quote = c;
  }
  return quote !== undefined;
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-doc-examples-'));
const bin = path.join(work, 'bin');
fs.mkdirSync(bin);
fs.writeFileSync(
  path.join(bin, 'ferry'),
  `#!/bin/sh\nexec "${process.execPath}" --import tsx "${path.join(ROOT, 'src/cli/main.ts')}" "$@"\n`,
  { mode: 0o755 },
);
let runs = 0;

async function bash(script: string): Promise<{ code: number; output: string }> {
  const tmp = path.join(work, `run-${++runs}`);
  fs.mkdirSync(tmp);
  const text = script.replace(/\/tmp\//g, `${tmp}/`).replace(/\bnpx ferry\b/g, 'ferry');
  const env = {
    ...process.env,
    PATH: `${bin}${path.delimiter}${process.env['PATH'] ?? ''}`,
    FERRY_LOG_LEVEL: 'silent',
    FERRY_DATA_DIR: path.join(tmp, 'data'),
  };
  try {
    const { stdout, stderr } = await exec('bash', ['-eo', 'pipefail', '-c', text], { cwd: ROOT, env, timeout: 60_000 });
    return { code: 0, output: stdout + stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, output: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

describe('the CLI examples of README.md and docs/', () => {
  afterAll(() => fs.rmSync(work, { recursive: true, force: true }));
  const examples = markdownFiles().flatMap(examplesOf);

  it('finds the examples', () => {
    expect(examples.filter((e) => !e.skip).length).toBeGreaterThan(0);
  });

  for (const e of examples) {
    if (e.skip) {
      it.skip(`${e.where} (skipped: ${e.skip})`, () => undefined);
      continue;
    }
    it(`${e.where} runs`, { timeout: 120_000 }, async () => {
      const needs = commandsOf(e.lines).filter((c) => !OFFLINE.has(c));
      expect(
        needs,
        `${e.where} runs ${needs.join(', ')}: mark the block with <!-- example: needs-service --> (or another reason) if it cannot run here`,
      ).toEqual([]);
      if (e.lines.some((l) => l.startsWith('$ '))) {
        for (const step of transcript(e.lines)) {
          const run = await bash(step.command);
          const failing = /^[A-Z]{3}_[A-Z0-9_]+: /.test(step.expected);
          expect(run.output.trimEnd(), step.command).toBe(step.expected.trimEnd());
          if (failing) expect(run.code, step.command).not.toBe(0);
          else expect(run.code, step.command).toBe(0);
        }
      } else {
        const run = await bash(e.lines.join('\n'));
        expect(run.code, `${e.where}:\n${run.output}`).toBe(e.exit ?? 0);
      }
    });
  }
});
