// Questions on the terminal (a secret is read without echo), or answers read line by line from a pipe, so that
// `printf '%s\n' "$URL" "$KEY" "$SECRET" | sensorcloud login` works in scripts too. Prompts go to stderr.
import { createInterface, type Interface } from 'node:readline';

export interface Prompter {
  ask(question: string, options?: { secret?: boolean; fallback?: string }): Promise<string>;
  close(): void;
}

export function createPrompter(
  input: NodeJS.ReadStream = process.stdin,
  output: NodeJS.WriteStream = process.stderr,
): Prompter {
  const terminal = input.isTTY === true;
  let muted = false;
  const rl: Interface = createInterface({ input, output, terminal });
  if (terminal) {
    // While a secret is typed nothing is echoed; the prompt itself is written before muting.
    const internal = rl as unknown as { _writeToOutput(text: string): void };
    const write = internal._writeToOutput.bind(rl);
    internal._writeToOutput = (text: string) => {
      if (!muted) write(text);
    };
  }
  const lines = terminal ? null : rl[Symbol.asyncIterator]();
  return {
    async ask(question, options = {}) {
      const label = options.fallback ? `${question} [${options.fallback}]: ` : `${question}: `;
      let answer: string;
      if (lines) {
        output.write(label);
        const next = await lines.next();
        output.write('\n');
        answer = next.done ? '' : String(next.value);
      } else {
        answer = await new Promise<string>((resolve) => {
          rl.question(label, resolve);
          muted = options.secret === true;
        });
        if (muted) output.write('\n');
        muted = false;
      }
      answer = answer.trim();
      return answer === '' && options.fallback !== undefined ? options.fallback : answer;
    },
    close() {
      rl.close();
    },
  };
}
