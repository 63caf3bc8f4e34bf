// The chat view's page: a Content-Security-Policy that allows only the view's own script
// (by nonce) and styles, the layout, and the script bundle (dist/webview.js, src/webview/).

import { MODES } from "./modes";

export interface PageSources {
  cspSource: string; // the webview's resource origin (webview.cspSource)
  scriptUri: string; // dist/webview.js as the webview sees it
  nonce: string;
  surface?: "sidebar" | "tab"; // the side bar's view or an editor tab (on <body data-surface>)
}

const MODE_BUTTONS = MODES.map((m) =>
  `<button role="radio" data-mode="${m.id}" aria-checked="${m.id === "ask"}" title="${m.label}: ${m.description}">${m.label}</button>`).join("");

export function newNonce(): string {
  const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  let nonce = "";
  for (let i = 0; i < 32; i++) nonce += chars[Math.floor(Math.random() * chars.length)];
  return nonce;
}

export function chatHtml({ cspSource, scriptUri, nonce, surface = "sidebar" }: PageSources): string {
  const csp = [
    "default-src 'none'", `img-src ${cspSource} data:`, `style-src ${cspSource} 'nonce-${nonce}'`,
    `font-src ${cspSource}`, `script-src 'nonce-${nonce}'`,
  ].join("; ");
  return `<!doctype html><html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<style nonce="${nonce}">
html,body{height:100%;margin:0}
body{font-family:var(--vscode-font-family);font-size:var(--vscode-font-size);color:var(--vscode-foreground);padding:0;display:flex;flex-direction:column;overflow:hidden}
#log{flex:1;min-height:0;overflow-y:auto;padding:0 8px}
#empty{display:none;flex:1;padding:16px 12px;opacity:.85;line-height:1.5}body[data-empty=true] #empty{display:block}body[data-empty=true] #log{flex:none}
#empty h2{font-size:1.2em;font-weight:600;margin:0 0 8px}#empty ul{padding-left:18px;margin:6px 0}
kbd{font-family:var(--vscode-editor-font-family);font-size:90%;padding:0 4px;border:1px solid var(--vscode-widget-border,var(--vscode-panel-border,#8886));border-radius:3px;background:var(--vscode-keybindingLabel-background,transparent)}
.m{margin:10px 0;overflow-wrap:anywhere}.user{white-space:pre-wrap;padding:4px 8px;border-left:3px solid var(--vscode-textLink-foreground);background:var(--vscode-textBlockQuote-background)}
.error{color:var(--vscode-errorForeground)}.note{opacity:.7;font-style:italic}
details{margin:4px 0}details.thinking{opacity:.8}details.thinking .body{white-space:pre-wrap}
details.tool summary{font-family:var(--vscode-editor-font-family)}details.tool.failed>summary{color:var(--vscode-errorForeground)}
details.tool.running>summary::after{content:" …"}details.tool.rejected>summary{color:var(--vscode-descriptionForeground)}
pre{background:var(--vscode-textCodeBlock-background);padding:4px;overflow:auto;white-space:pre-wrap}
.code{position:relative}.code .copy{position:absolute;top:2px;right:2px;font-size:11px}
#queue{padding-left:16px;margin:0 0 4px}#queue li{cursor:pointer;opacity:.8}#queue li:hover{text-decoration:line-through}
#bar{position:relative;flex:none;padding:6px 8px 8px;border-top:1px solid var(--vscode-panel-border,#8884)}
#latest{display:none;position:absolute;bottom:calc(100% + 8px);left:50%;transform:translateX(-50%);z-index:2;border-radius:12px;padding:2px 10px;box-shadow:0 1px 4px var(--vscode-widget-shadow,#0006)}
body[data-scrolled-up=true] #latest{display:block}
textarea{width:100%;min-height:3em;max-height:40vh;box-sizing:border-box;resize:vertical;font-family:inherit;font-size:inherit;color:var(--vscode-input-foreground);background:var(--vscode-input-background);border:1px solid var(--vscode-input-border,transparent);border-radius:2px;padding:4px 6px}
textarea:focus{outline:1px solid var(--vscode-focusBorder);outline-offset:-1px}
button{font-family:inherit;font-size:inherit;color:var(--vscode-button-secondaryForeground);background:var(--vscode-button-secondaryBackground);border:1px solid var(--vscode-button-border,transparent);border-radius:2px;padding:1px 8px;cursor:pointer}
button:hover:not(:disabled){background:var(--vscode-button-secondaryHoverBackground)}button:disabled{opacity:.5;cursor:default}
button:focus-visible{outline:1px solid var(--vscode-focusBorder);outline-offset:1px}
#latest,#stop:not(:disabled){color:var(--vscode-button-foreground);background:var(--vscode-button-background)}
#latest:hover,#stop:not(:disabled):hover{background:var(--vscode-button-hoverBackground)}
#suggest{list-style:none;margin:0;padding:0;max-height:40vh;overflow:auto}details.context summary{opacity:.8;font-size:90%}#suggest li{cursor:pointer;padding:1px 4px}
#suggest li.sel{background:var(--vscode-list-activeSelectionBackground)}#suggest .d{opacity:.7;margin-left:6px}
.user{position:relative}.user button.rewind{font-size:11px;margin-top:4px;visibility:hidden}.user:hover button.rewind,.user button.rewind:focus{visibility:visible}
.plan-actions{display:flex;gap:6px;align-items:center;flex-wrap:wrap}.notice button{margin-left:6px;font-style:normal}
.permission{padding:4px 8px;border-left:3px solid var(--vscode-editorWarning-foreground)}.permission .answers{display:flex;gap:6px;flex-wrap:wrap;margin-top:4px}
.subagent{border-left:2px solid var(--vscode-textLink-foreground);margin:4px 0 4px 6px;padding-left:8px}
.subagent.failed,.subagent.aborted{border-left-color:var(--vscode-errorForeground)}
.sub-head{display:flex;flex-wrap:wrap;gap:2px 6px;align-items:center;font-size:90%}.sub-title{font-weight:600}
.sub-status{opacity:.8;font-style:italic}.sub-usage{opacity:.7;font-size:90%;white-space:nowrap}.subagent.running .sub-status::after{content:" …"}
.sub-head button{font-size:11px;white-space:nowrap}.sub-title{flex:1 1 100%}details.tool.has-sub.running>pre.output{display:none}
#controls{display:flex;gap:8px;align-items:center;margin-top:4px}
#mode{display:inline-flex;border:1px solid var(--vscode-checkbox-border,var(--vscode-panel-border,#8886));border-radius:3px;overflow:hidden}
#mode button{border:0;border-radius:0;background:transparent;color:var(--vscode-foreground);padding:1px 9px;white-space:nowrap}
#mode button+button{border-left:1px solid var(--vscode-checkbox-border,var(--vscode-panel-border,#8886))}
#mode button:hover{background:var(--vscode-toolbar-hoverBackground,#8883)}
#mode button[aria-checked=true]{background:var(--vscode-button-background,#0e639c);color:var(--vscode-button-foreground,#fff)}
body[data-mode=plan] #mode button[aria-checked=true]{background:var(--vscode-editorInfo-foreground,#3794ff)}
.hljs-keyword,.hljs-selector-tag,.hljs-doctag{color:var(--vscode-debugTokenExpression-name,#c586c0)}
.hljs-string,.hljs-regexp,.hljs-char.escape_{color:var(--vscode-debugTokenExpression-string,#ce9178)}
.hljs-number{color:var(--vscode-debugTokenExpression-number,#b5cea8)}
.hljs-literal,.hljs-built_in,.hljs-variable.language_{color:var(--vscode-debugTokenExpression-boolean,#4e94ce)}
.hljs-comment,.hljs-quote{color:var(--vscode-debugTokenExpression-value,#8b949e);font-style:italic}
.hljs-title,.hljs-title.function_,.hljs-section{color:var(--vscode-symbolIcon-functionForeground,#dcdcaa)}
.hljs-title.class_,.hljs-type{color:var(--vscode-symbolIcon-classForeground,#4ec9b0)}
.hljs-attr,.hljs-attribute,.hljs-property,.hljs-params{color:var(--vscode-symbolIcon-variableForeground,#9cdcfe)}
.hljs-meta{color:var(--vscode-symbolIcon-constantForeground,#4fc1ff)}
.hljs-addition{color:var(--vscode-gitDecoration-addedResourceForeground,#81b88b);background:var(--vscode-diffEditor-insertedLineBackground,#9bb95533);display:inline-block;width:100%}
.hljs-deletion{color:var(--vscode-gitDecoration-deletedResourceForeground,#c74e39);background:var(--vscode-diffEditor-removedLineBackground,#ff000033);display:inline-block;width:100%}
.diff-card{margin:4px 0 6px;border:1px solid var(--vscode-panel-border,#8886);border-radius:3px}
.diff-card .diff-head{display:flex;gap:8px;align-items:center;padding:2px 6px;background:var(--vscode-sideBarSectionHeader-background,#8881);font-size:90%}
.diff-card .diff-path{flex:1;font-family:var(--vscode-editor-font-family)}.diff-card .added{color:var(--vscode-gitDecoration-addedResourceForeground,#81b88b)}
.diff-card .removed{color:var(--vscode-gitDecoration-deletedResourceForeground,#c74e39)}
.diff-card pre{margin:0;max-height:16em;white-space:pre;font-family:var(--vscode-editor-font-family);font-size:var(--vscode-editor-font-size,12px)}
a.file{color:var(--vscode-textLink-foreground);cursor:pointer;text-decoration:none}a.file:hover{text-decoration:underline}
.retry{opacity:.85}.error .attempts{opacity:.8}
.compaction{display:flex;align-items:center;gap:8px;font-size:90%;opacity:.85}.compaction.running .label{font-style:italic}
.compaction .spinner{flex:none;width:10px;height:10px;border:2px solid var(--vscode-progressBar-background,#0e70c0);border-right-color:transparent;border-radius:50%;animation:pi-spin .8s linear infinite}
@keyframes pi-spin{to{transform:rotate(360deg)}}@media (prefers-reduced-motion:reduce){.compaction .spinner{animation-duration:3s}}
details.compaction{display:block;opacity:1}details.compaction>summary{display:flex;align-items:center;gap:8px;cursor:pointer;opacity:.85;list-style:none}
details.compaction>summary::-webkit-details-marker{display:none}details.compaction>summary::before,details.compaction>summary::after{content:"";flex:1 0 12px;border-top:1px solid var(--vscode-panel-border,#8886)}
details.compaction>summary .label{flex:0 1 auto;text-align:center}details.compaction>summary .label::before{content:"▸ "}details.compaction[open]>summary .label::before{content:"▾ "}
details.compaction>.text{margin:4px 0 0;padding:2px 8px;border-left:2px solid var(--vscode-panel-border,#8886);font-size:95%}details.compaction>.text h2,details.compaction>.text h3{font-size:1em;margin:6px 0 2px}
.compaction.warning{color:var(--vscode-editorWarning-foreground,#cca700);opacity:1}.compaction.warning .icon{flex:none}
#selections{display:flex;gap:6px;flex-wrap:wrap;margin-bottom:4px}#selections .chip{font-family:var(--vscode-editor-font-family);font-size:90%;padding:0 2px 0 6px;border-radius:3px;background:var(--vscode-badge-background);color:var(--vscode-badge-foreground)}#selections button{background:transparent;border:0;color:inherit;padding:0 4px}
#attachments{display:flex;gap:6px;flex-wrap:wrap;margin-bottom:4px}#attachments .chip{position:relative;display:inline-block}
#attachments img{height:48px;max-width:96px;object-fit:cover;border:1px solid var(--vscode-panel-border,#888);border-radius:3px}
#attachments .remove{position:absolute;top:-6px;right:-6px;font-size:10px;padding:0 3px;cursor:pointer}
.user .images img.thumb{height:96px;max-width:240px;object-fit:contain;image-rendering:pixelated;margin:2px 4px 2px 0;border-radius:3px;border:1px solid var(--vscode-panel-border,#888)}
.process-note{display:flex;gap:6px;align-items:center;flex-wrap:wrap;margin:2px 0 6px;font-size:90%}.process-note .process-status{opacity:.85}.process-note.running .process-status::before{content:"● ";color:var(--vscode-testing-iconPassed,#73c991)}.process-note button{font-size:11px}
#plan{margin:0 0 6px;border:1px solid var(--vscode-widget-border,var(--vscode-panel-border,#8886));border-radius:4px;background:var(--vscode-editorWidget-background,transparent)}
#plan>summary{list-style:none;display:flex;gap:6px;align-items:baseline;padding:3px 8px;cursor:pointer;user-select:none}
#plan>summary::-webkit-details-marker{display:none}#plan>summary::before{content:"▸";opacity:.7;width:.8em}#plan[open]>summary::before{content:"▾"}
.plan-title{font-weight:600}.plan-count{opacity:.75;font-variant-numeric:tabular-nums}
.plan-now{flex:1;min-width:0;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;opacity:.85}#plan[open] .plan-now{display:none}
.plan-why{padding:0 8px 2px 24px;opacity:.8;font-size:90%;white-space:pre-wrap}
.plan-steps{list-style:none;margin:0;padding:0 8px 6px 8px;max-height:30vh;overflow:auto}
.plan-step{display:flex;gap:6px;line-height:1.55}.plan-mark{flex:none;width:1em;text-align:center}
.plan-step.completed{opacity:.65}.plan-step.completed .plan-text{text-decoration:line-through}
.plan-step.completed .plan-mark{color:var(--vscode-testing-iconPassed,#73c991)}
.plan-step.in_progress .plan-text{font-weight:600}.plan-step.in_progress .plan-mark{color:var(--vscode-textLink-foreground,#3794ff)}
.question{padding:6px 10px 8px;border:1px solid var(--vscode-focusBorder,#3794ff);border-radius:4px;background:var(--vscode-editorWidget-background,transparent)}
.q-head{font-size:85%;opacity:.75}.q-text{font-weight:600;margin:2px 0 8px;white-space:pre-wrap}
.q-options{display:flex;flex-direction:column;gap:4px}
button.q-option{display:flex;flex-direction:column;align-items:flex-start;text-align:left;padding:4px 10px;border-radius:3px}
label.q-option{display:flex;gap:6px;align-items:baseline;cursor:pointer;padding:2px 0}.q-label{font-weight:500}
.q-desc{opacity:.75;font-size:90%}label.q-option .q-desc::before{content:"— "}
.question textarea,.permission textarea{margin-top:8px;min-height:2.6em}
.q-actions{display:flex;gap:6px;margin-top:8px}.permission .reason-form{display:flex;flex-direction:column;align-items:flex-start;gap:4px}
.q-submit,.send-reason{color:var(--vscode-button-foreground)!important;background:var(--vscode-button-background)!important}
.permission button.stop{color:var(--vscode-errorForeground)}
.edited-note,.answer-note{font-size:90%;margin:0 0 4px 14px;white-space:pre-wrap}.answer-note{font-style:normal}.run-stopped{color:var(--vscode-editorWarning-foreground);opacity:1}
mark.found{background:var(--vscode-editor-findMatchHighlightBackground,#ea5c0055);color:inherit;outline:1px solid var(--vscode-editor-findMatchBorder,#ea5c00)}
</style></head><body data-surface="${surface}" data-empty="true">
<div id="empty"><h2>Ask pi to work in this workspace</h2>
<div>Describe what you want: explain this code, fix the failing test, add a feature. pi reads the files, runs tools and asks before it changes anything (in <b>ask</b> mode).</div>
<ul><li><kbd>@</kbd> adds a file, <kbd>/</kbd> lists commands, paste an image to send it</li>
<li><kbd>Enter</kbd> sends, <kbd>Shift+Enter</kbd> new line, <kbd>↑</kbd> recalls your last prompt, <kbd>Esc</kbd> stops a run</li>
<li><b>plan</b> only reads and writes a plan; <b>auto-edit</b> edits files without asking</li></ul></div>
<div id="log"></div>
<div id="bar"><button id="latest" title="Scroll to the end of the conversation and follow it again">↓ Jump to latest</button><details id="plan" hidden></details><ul id="queue"></ul><ul id="suggest"></ul><div id="selections"></div><div id="attachments"></div><textarea id="input" placeholder="Ask pi… (@ adds a file, / a command)"></textarea>
<div id="controls"><button id="stop" disabled title="Stop the run (Esc)">Stop</button>
<div id="mode" role="radiogroup" aria-label="Mode">${MODE_BUTTONS}</div></div></div>
<script nonce="${nonce}" src="${scriptUri}"></script>
</body></html>`;
}
