// Polls until `predicate` (sync or async) holds, for the node tests: they wait for what they mean, not a time.
export async function waitFor(predicate, timeout = 20000) {
  const start = Date.now();
  while (!(await predicate())) {
    if (Date.now() - start > timeout) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 20));
  }
}
