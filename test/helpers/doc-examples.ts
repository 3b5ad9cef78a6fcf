import fs from 'node:fs';

/**
 * The `sh` code blocks of a document marked `<!-- example: NAME -->` on the line before, in the
 * order they appear, unindented: a docs test runs them as one bash script against a real Service.
 */
export function docExamples(file: string, name: string): string[] {
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  const marker = new RegExp(`<!--\\s*example:\\s*${name}\\s*-->`);
  const blocks: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!/^\s*```sh\s*$/.test(lines[i] as string)) continue;
    let j = i - 1;
    while (j >= 0 && (lines[j] as string).trim() === '') j--;
    const marked = marker.test(lines[j] ?? '');
    const indent = /^\s*/.exec(lines[i] as string)?.[0].length ?? 0;
    const body: string[] = [];
    for (i++; i < lines.length && !/^\s*```\s*$/.test(lines[i] as string); i++)
      body.push((lines[i] as string).slice(indent));
    if (marked) blocks.push(body.join('\n'));
  }
  return blocks;
}

/** The output comments of a script: `# …` lines right under a command line or under another output line. */
export function expectedOutputs(script: string): string[] {
  const out: string[] = [];
  let prev: 'command' | 'output' | 'other' = 'other';
  for (const line of script.split('\n')) {
    const comment = /^#\s(.*)$/.exec(line);
    if (comment && prev !== 'other') {
      out.push(comment[1] as string);
      prev = 'output';
    } else if (comment) prev = 'other';
    else prev = line.trim() === '' ? 'other' : 'command';
  }
  return out;
}

/** Where each expected output line was printed, in order; the first one missing fails `fail`. */
export function checkOutputs(script: string, stdout: string, fail: (message: string) => void): void {
  const printed = stdout.split('\n');
  let at = 0;
  for (const want of expectedOutputs(script)) {
    const found = printed.indexOf(want, at);
    if (found < 0) {
      fail(`"${want}" not printed after line ${at} of:\n${stdout}`);
      return;
    }
    at = found + 1;
  }
}
