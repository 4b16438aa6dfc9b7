// The CLI's failures and their exit codes: 1 an API error (the API's own message), 2 a usage error, 3 an
// authentication error (missing or rejected credentials), 4 a check that ran and failed (`connectors test`: the
// API answered, the connector's endpoint did not take the push). index.ts is the only place that turns them into an
// exit.

export const EXIT_OK = 0;
export const EXIT_API = 1;
export const EXIT_USAGE = 2;
export const EXIT_AUTH = 3;
export const EXIT_CHECK_FAILED = 4;

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

/** A wrong or missing argument, option or setting: nothing was sent, or nothing should have been. */
export class UsageError extends CliError {
  constructor(message: string) {
    super(message, EXIT_USAGE);
  }
}

/** The API answered with an error (or could not be reached); `status` is the HTTP status, 0 when unreachable. */
export class ApiError extends CliError {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message, EXIT_API);
  }
}

/** The request was sent but no answer came in time (the server may still carry it out). */
export class ApiTimeoutError extends ApiError {
  constructor(message: string) {
    super(message, 0);
  }
}

/** What the command checked failed, and its result was printed (stdout); the message says what failed. */
export class CheckFailedError extends CliError {
  constructor(message: string) {
    super(message, EXIT_CHECK_FAILED);
  }
}

/** No credentials, or the server refused them (401, or an invalid_grant from the token endpoint). */
export class AuthError extends CliError {
  constructor(message: string) {
    super(message, EXIT_AUTH);
  }
}
