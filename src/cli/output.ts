// What commands print: aligned tables for people (default), one JSON document (or NDJSON for streams) with
// --json, only names with --quiet. Results go to stdout, notes and progress to stderr. Colours only on a
// terminal, never with NO_COLOR (https://no-color.org) or --no-color.

/** How the CLI prints a set secret or header value: never a value to send back. */
export const REDACTED = '<redacted>';

export interface OutputOptions {
  json?: boolean;
  quiet?: boolean;
  /** commander's --no-color: false when given. */
  color?: boolean;
}

export interface Column<T> {
  header: string;
  value(item: T): string;
  /** Colours a cell (after alignment is computed from the plain text). */
  paint?(text: string, item: T, out: Output): string;
}

type Stream = NodeJS.WriteStream;

const ESC = '\u001b[';

function useColour(stream: Stream, env: NodeJS.ProcessEnv, flag: boolean | undefined): boolean {
  if (flag === false) return false;
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  return stream.isTTY === true;
}

export class Output {
  readonly json: boolean;
  readonly quiet: boolean;
  readonly colour: boolean;
  readonly errColour: boolean;

  constructor(
    options: OutputOptions,
    readonly stdout: Stream = process.stdout,
    readonly stderr: Stream = process.stderr,
    env: NodeJS.ProcessEnv = process.env,
  ) {
    this.json = options.json === true;
    this.quiet = options.quiet === true && !this.json;
    this.colour = useColour(stdout, env, options.color);
    this.errColour = useColour(stderr, env, options.color);
  }

  private paint(on: boolean, code: string, text: string): string {
    return on ? `${ESC}${code}m${text}${ESC}0m` : text;
  }
  bold = (text: string) => this.paint(this.colour, '1', text);
  dim = (text: string) => this.paint(this.colour, '2', text);
  green = (text: string) => this.paint(this.colour, '32', text);
  red = (text: string) => this.paint(this.colour, '31', text);
  yellow = (text: string) => this.paint(this.colour, '33', text);

  /** Writes to stdout, waiting when the pipe is full (exports of many events). */
  async write(text: string): Promise<void> {
    if (!this.stdout.write(text)) await new Promise<void>((resolve) => this.stdout.once('drain', resolve));
  }

  line(text = ''): void {
    this.stdout.write(`${text}\n`);
  }

  /** One JSON document. */
  printJson(value: unknown): void {
    this.line(JSON.stringify(value, null, 2));
  }

  /** A note for people on stderr (left out with --quiet; with --json too it goes to stderr, never stdout). */
  note(message: string): void {
    if (this.quiet) return;
    this.stderr.write(`${message}\n`);
  }

  /** A warning on stderr, shown even with --json (scripts' stdout stays clean); left out with --quiet. */
  warn(message: string): void {
    if (this.quiet) return;
    this.stderr.write(`${this.paint(this.errColour, '33', 'warning:')} ${message}\n`);
  }

  error(message: string): void {
    this.stderr.write(`${this.paint(this.errColour, '31', 'error:')} ${message}\n`);
  }

  /** Rows with aligned columns (padding computed on the plain text, so colours do not shift them). */
  table<T>(items: readonly T[], columns: readonly Column<T>[]): void {
    const cells = items.map((item) => columns.map((c) => c.value(item).replace(/[\r\n\t]+/g, ' ')));
    const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((row) => row[i]!.length)));
    const last = columns.length - 1;
    const pad = (text: string, plain: string, i: number) =>
      i === last ? text : text + ' '.repeat(widths[i]! - plain.length);
    this.line(
      columns
        .map((c, i) => pad(this.bold(c.header), c.header, i))
        .join('  ')
        .trimEnd(),
    );
    items.forEach((item, r) => {
      const row = cells[r]!;
      this.line(
        columns
          .map((c, i) => pad(c.paint ? c.paint(row[i]!, item, this) : row[i]!, row[i]!, i))
          .join('  ')
          .trimEnd(),
      );
    });
  }

  /** A list result: the array as JSON, names with --quiet, else a table (or a note when empty). */
  list<T>(items: readonly T[], columns: readonly Column<T>[], nameOf: (item: T) => string, what: string): void {
    if (this.json) return this.printJson(items);
    if (this.quiet) {
      for (const item of items) this.line(nameOf(item));
      return;
    }
    if (items.length === 0) {
      this.note(`no ${what}`);
      return;
    }
    this.table(items, columns);
  }

  /** A single resource: its JSON, its name with --quiet, else `field  value` lines. */
  record(value: unknown, fields: ReadonlyArray<readonly [string, string]>, name: string): void {
    if (this.json) return this.printJson(value);
    if (this.quiet) {
      if (name) this.line(name);
      return;
    }
    const width = Math.max(...fields.map(([label]) => label.length));
    for (const [label, text] of fields) this.line(`${this.bold(label.padEnd(width))}  ${text}`);
  }

  /** A call with nothing to show (deletes, :sync): `{}` with --json, a note for people. */
  done(response: unknown, message: string): void {
    if (this.json) return this.printJson(response);
    if (!this.quiet) this.line(message);
  }
}
