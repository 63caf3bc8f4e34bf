// The daemons running a faux script (each node test and e2e run writes its own), by process id, for the
// tests that kill one or count them. A daemon's own helper (a child with the same command line) is left out.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

export function daemonPids(script) {
  let found;
  try {
    found = execFileSync("pgrep", ["-f", "--", `--faux-script ${script}`], { encoding: "utf8" }).split("\n").filter(Boolean).map(Number);
  } catch {
    return []; // none running
  }
  const parent = (pid) => Number(readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")[1]);
  return found.filter((pid) => { try { return !found.includes(parent(pid)); } catch { return false; } });
}
