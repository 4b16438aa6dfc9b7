// A node:test reporter that writes one entry per failed test (file, test name, first lines of the error) and nothing
// else. `npm test` runs it beside the usual reporter and prints what it wrote at the very end of the run: CI shows
// only the last part of a long log, and a failure in the first pass scrolled out of it, leaving "exit 1" unexplained.
export default async function* failures(source) {
  for await (const event of source) {
    if (event.type !== 'test:fail') continue;
    const { name, file, details } = event.data;
    const error = details?.error;
    // A suite fails because a test in it failed: that test has its own line.
    if (error?.failureType === 'subtestsFailed') continue;
    const cause = error?.cause ?? error;
    // The first lines of the message: an assertion's first line only says "Expected values to be strictly equal:".
    const message = String(cause?.message ?? cause ?? 'failed')
      .replace(/\x1b\[[0-9;]*m/g, '') // a browser test's call log is coloured
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '')
      .slice(0, 3)
      .join(' / ');
    // No line number: under tsx the runner reports the transformed file's lines.
    const where = file ? file.replace(`${process.cwd()}/`, '') : '(no file)';
    yield `${where}  ${name}\n    ${message.slice(0, 300)}\n`;
  }
}
