// Waiting in tests for something another process or connection does: polls every 50 ms, fails naming what it waited for.

/** Resolves once `check` holds; throws `timed out waiting for <what>` after `timeoutMs`. */
export async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
