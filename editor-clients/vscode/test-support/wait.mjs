// Polls until `check` (sync or async) gives a truthy value, and returns it: the node tests and the e2e flows
// wait for what they mean, not a time. Timed out, the error names `what` was waited for; the default bound
// (a minute) is reached only when it never comes, and is long enough for a loaded 2-core host.
export async function waitFor(check, what = "the condition", timeout = 60000) {
  const start = Date.now();
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() - start > timeout) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
