// The chat view's page: a Content-Security-Policy that allows only the view's own script
// (by nonce) and styles, the layout, and the script bundle (dist/webview.js, src/webview/).

export interface PageSources {
  cspSource: string; // the webview's resource origin (webview.cspSource)
  scriptUri: string; // dist/webview.js as the webview sees it
  nonce: string;
  surface?: "sidebar" | "tab"; // the side bar's view or an editor tab (on <body data-surface>)
}

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
body{font-family:var(--vscode-font-family);font-size:var(--vscode-font-size);color:var(--vscode-foreground);padding:0 8px}
.m{margin:10px 0;overflow-wrap:anywhere}.user{white-space:pre-wrap;padding:4px 8px;border-left:3px solid var(--vscode-textLink-foreground);background:var(--vscode-textBlockQuote-background)}
.error{color:var(--vscode-errorForeground)}.note{opacity:.7;font-style:italic}
details{margin:4px 0}details.thinking{opacity:.8}details.thinking .body{white-space:pre-wrap}
details.tool summary{font-family:var(--vscode-editor-font-family)}details.tool.failed>summary{color:var(--vscode-errorForeground)}
details.tool.running>summary::after{content:" …"}
pre{background:var(--vscode-textCodeBlock-background);padding:4px;overflow:auto;white-space:pre-wrap}
.code{position:relative}.code .copy{position:absolute;top:2px;right:2px;font-size:11px}
#queue{padding-left:16px;margin:0 0 4px}#queue li{cursor:pointer;opacity:.8}#queue li:hover{text-decoration:line-through}
#bar{position:sticky;bottom:0;background:var(--vscode-sideBar-background);padding:6px 0}
textarea{width:100%;min-height:3em;box-sizing:border-box}
#suggest{list-style:none;margin:0;padding:0;max-height:40vh;overflow:auto}details.context summary{opacity:.8;font-size:90%}#suggest li{cursor:pointer;padding:1px 4px}
#suggest li.sel{background:var(--vscode-list-activeSelectionBackground)}#suggest .d{opacity:.7;margin-left:6px}
.user{position:relative}.user button.rewind{font-size:11px;margin-top:4px;visibility:hidden}.user:hover button.rewind,.user button.rewind:focus{visibility:visible}
.plan-actions{display:flex;gap:6px;align-items:center;flex-wrap:wrap}.notice button{margin-left:6px;font-style:normal}
.permission{padding:4px 8px;border-left:3px solid var(--vscode-editorWarning-foreground)}.permission .answers{display:flex;gap:6px;flex-wrap:wrap;margin-top:4px}
.subagent{border-left:2px solid var(--vscode-textLink-foreground);margin:4px 0 4px 6px;padding-left:8px}
.subagent.failed,.subagent.aborted{border-left-color:var(--vscode-errorForeground)}
.sub-head{display:flex;gap:6px;align-items:center;font-size:90%}.sub-title{font-weight:600}
.sub-status{opacity:.8;font-style:italic}.subagent.running .sub-status::after{content:" …"}
.sub-head button{font-size:11px;white-space:nowrap}.sub-title{flex:1}details.tool.has-sub.running>pre.output{display:none}
#controls{display:flex;gap:6px;align-items:center;margin-top:4px}#controls label{opacity:.8}
body[data-mode=plan] #mode{outline:1px solid var(--vscode-textLink-foreground)}
.hl-k{color:var(--vscode-debugTokenExpression-name,#c586c0)}.hl-s{color:var(--vscode-debugTokenExpression-string,#ce9178)}
.hl-n{color:var(--vscode-debugTokenExpression-number,#b5cea8)}.hl-l{color:var(--vscode-debugTokenExpression-boolean,#4e94ce)}
.hl-c{color:var(--vscode-debugTokenExpression-value,#8b949e);font-style:italic}
#attachments{display:flex;gap:6px;flex-wrap:wrap;margin-bottom:4px}#attachments .chip{position:relative;display:inline-block}
#attachments img{height:48px;max-width:96px;object-fit:cover;border:1px solid var(--vscode-panel-border,#888);border-radius:3px}
#attachments .remove{position:absolute;top:-6px;right:-6px;font-size:10px;padding:0 3px;cursor:pointer}
.user .images img.thumb{height:96px;max-width:240px;object-fit:contain;image-rendering:pixelated;margin:2px 4px 2px 0;border-radius:3px;border:1px solid var(--vscode-panel-border,#888)}
mark.found{background:var(--vscode-editor-findMatchHighlightBackground,#ea5c0055);color:inherit;outline:1px solid var(--vscode-editor-findMatchBorder,#ea5c00)}
</style></head><body data-surface="${surface}">
<div id="log"></div>
<div id="bar"><ul id="queue"></ul><ul id="suggest"></ul><div id="attachments"></div><textarea id="input" placeholder="Ask pi… (Enter sends, Shift+Enter new line, / for commands, @ for files, paste images)"></textarea>
<div id="controls"><button id="stop" disabled>Stop</button>
<label for="mode">Mode</label><select id="mode" title="plan: read-only tools, the agent writes a plan · ask: asks before changes · auto-edit: edits files without asking">
<option value="plan">plan</option><option value="ask" selected>ask</option><option value="auto-edit">auto-edit</option></select></div></div>
<script nonce="${nonce}" src="${scriptUri}"></script>
</body></html>`;
}
