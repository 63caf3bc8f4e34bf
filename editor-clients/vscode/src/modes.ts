// The session's modes (setMode, mode_changed): their names as the status bar and the picker
// show them, and what "Execute the plan" sends. No `vscode` import.

export type Mode = "plan" | "ask" | "auto-edit";

export const MODES: { id: Mode; label: string; description: string }[] = [
  { id: "plan", label: "plan", description: "only tools that change nothing run; the agent writes a plan" },
  { id: "ask", label: "ask", description: "asks before changes, as the permission rules say" },
  { id: "auto-edit", label: "auto-edit", description: "edits files without asking; commands still ask" },
];

export const PLAN_FOLLOW_UP = "Go ahead with the plan.";

const ICONS: Record<string, string> = { plan: "$(checklist)", ask: "$(shield)", "auto-edit": "$(edit)" };

export function modeStatus(mode: string): { text: string; tooltip: string } {
  const known = MODES.find((m) => m.id === mode);
  return { text: `${ICONS[mode] ?? "$(circle)"} ${mode}`, tooltip: `pi mode: ${mode}${known ? ` (${known.description})` : ""} — click to change` };
}
