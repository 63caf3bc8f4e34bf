// The pi-daemon servers a test starts (attach mode, `pi-daemon attach` starting `pi-daemon serve`): each test
// gives them a runtime folder of its own (XDG_RUNTIME_DIR, a short path: a Unix socket's stays under 108 bytes)
// and stops them at its end, so nothing outlives the suite.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { waitFor } from "./wait.mjs";

export const runtimeDir = () => mkdtempSync("/tmp/pirt-");

// The servers started with this runtime folder: found by their environment, so one still starting counts too.
// A server's own helper (a child with the same command line) is left out.
export function serverPids(runtime) {
  const pids = [];
  const parent = (pid) => Number(readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")[1]);
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const args = readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0");
      if (!args.includes("serve")) continue;
      if (readFileSync(`/proc/${name}/environ`, "utf8").split("\0").includes(`XDG_RUNTIME_DIR=${runtime}`)) pids.push(Number(name));
    } catch {} // gone meanwhile, or not ours to read
  }
  return pids.filter((pid) => { try { return !pids.includes(parent(pid)); } catch { return false; } });
}

const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

// SIGTERM to each (it aborts its runs and exits, its helper with it), SIGKILL to one that has not gone in 10 s,
// again until none has been seen for 3 s (an editor still shutting down may start one more through attach);
// the folder removed.
export async function stopServers(runtime) {
  const deadline = Date.now() + 60_000;
  let quietSince = Date.now();
  while (Date.now() - quietSince < 3_000 && Date.now() < deadline) {
    const pids = serverPids(runtime);
    if (pids.length) {
      for (const pid of pids) process.kill(pid, "SIGTERM");
      await waitFor(() => pids.every((pid) => !alive(pid)), "the servers to exit", 10_000).catch(() => {
        for (const pid of pids.filter(alive)) process.kill(pid, "SIGKILL");
      });
      quietSince = Date.now();
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  rmSync(runtime, { recursive: true, force: true });
}
