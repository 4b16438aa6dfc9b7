// A start that cannot succeed because of how the service was set up (a busy port, an unusable data dir, a second
// process on the same data dir): `sensorcloud` prints the message as one line, with no stack trace, and exits 2.
// The message says what is wrong and what to do about it.
export class StartupError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StartupError';
  }
}
