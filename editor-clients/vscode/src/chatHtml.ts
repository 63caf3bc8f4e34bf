// The chat view's page: a Content-Security-Policy that allows only the view's own script
// (by nonce) and styles, the layout, and the script bundle (dist/webview.js, src/webview/).

export interface PageSources {
  cspSource: string; // the webview's resource origin (webview.cspSource)
  scriptUri: string; // dist/webview.js as the webview sees it
  nonce: string;
}

export function newNonce(): string {
  const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  let nonce = "";
  for (let i = 0; i < 32; i++) nonce += chars[Math.floor(Math.random() * chars.length)];
  return nonce;
}

export function chatHtml({ cspSource, scriptUri, nonce }: PageSources): string {
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
details.tool summary{font-family:var(--vscode-editor-font-family)}details.tool.failed summary{color:var(--vscode-errorForeground)}
details.tool.running summary::after{content:" …"}
pre{background:var(--vscode-textCodeBlock-background);padding:4px;overflow:auto;white-space:pre-wrap}
.code{position:relative}.code .copy{position:absolute;top:2px;right:2px;font-size:11px}
#queue{padding-left:16px;margin:0 0 4px}#queue li{cursor:pointer;opacity:.8}#queue li:hover{text-decoration:line-through}
#bar{position:sticky;bottom:0;background:var(--vscode-sideBar-background);padding:6px 0}
textarea{width:100%;min-height:3em;box-sizing:border-box}
#suggest{list-style:none;margin:0;padding:0;max-height:40vh;overflow:auto}details.context summary{opacity:.8;font-size:90%}#suggest li{cursor:pointer;padding:1px 4px}
#suggest li.sel{background:var(--vscode-list-activeSelectionBackground)}#suggest .d{opacity:.7;margin-left:6px}
</style></head><body>
<div id="log"></div>
<div id="bar"><ul id="queue"></ul><ul id="suggest"></ul><textarea id="input" placeholder="Ask pi… (Enter sends, Shift+Enter new line, / for commands, @ for files)"></textarea>
<button id="stop" disabled>Stop</button></div>
<script nonce="${nonce}" src="${scriptUri}"></script>
</body></html>`;
}
