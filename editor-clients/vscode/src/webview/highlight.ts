// Syntax colours for the chat's code blocks. No highlighter library is among the extension's
// dependencies, so this is a small lexer, not a grammar: per language family it marks comments,
// strings, numbers, keywords and literals (true/None/null…), which is most of what colour does
// for reading an answer. The colours are the VS Code theme's (chatHtml.ts: the debug view's token
// colours, the only token colours a webview is given), so they follow the user's theme.

type Family = { keywords: Set<string>; literals: Set<string>; comment: RegExp; strings: RegExp };

const words = (text: string) => new Set(text.split(" "));

const C_COMMENT = /\/\/[^\n]*|\/\*[\s\S]*?\*\//y;
const HASH_COMMENT = /#[^\n]*/y;

const FAMILIES: Record<string, Family> = {
  python: {
    keywords: words("and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield match case"),
    literals: words("True False None self"),
    comment: HASH_COMMENT,
    strings: /[rbfu]{0,2}("""[\s\S]*?"""|'''[\s\S]*?'''|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')/y,
  },
  js: {
    keywords: words("async await break case catch class const continue debugger default delete do else export extends finally for from function if import in instanceof interface let new of return static super switch throw try type typeof var void while with yield enum implements private protected public readonly"),
    literals: words("true false null undefined this NaN Infinity"),
    comment: C_COMMENT,
    strings: /`(?:\\[\s\S]|[^`\\])*`|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'/y,
  },
  c: { // C, C++, Java, C#, Go, Rust, Kotlin, Swift: close enough for reading
    keywords: words("auto break case catch class const continue default do else enum extern for fn func go goto if impl import in let loop match mod mut namespace new package private protected pub public return static struct switch template this throw try typedef union unsafe use using var void volatile while trait where defer chan select interface type final override virtual val"),
    literals: words("true false null nullptr nil None Some Ok Err self Self"),
    comment: C_COMMENT,
    strings: /"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])'/y,
  },
  shell: {
    keywords: words("if then else elif fi for while until do done case esac in function return export local readonly set unset source alias cd echo exit"),
    literals: words("true false"),
    comment: HASH_COMMENT,
    strings: /"(?:\\.|[^"\\])*"|'[^']*'/y,
  },
  json: { keywords: words(""), literals: words("true false null"), comment: C_COMMENT, strings: /"(?:\\.|[^"\\\n])*"/y },
};

const ALIASES: Record<string, string> = {
  py: "python", python: "python", python3: "python",
  js: "js", javascript: "js", jsx: "js", ts: "js", typescript: "js", tsx: "js", mjs: "js",
  c: "c", h: "c", cpp: "c", "c++": "c", cc: "c", java: "c", cs: "c", csharp: "c", go: "c", rust: "c", rs: "c",
  kotlin: "c", swift: "c",
  sh: "shell", bash: "shell", shell: "shell", zsh: "shell", console: "shell",
  json: "json", jsonc: "json", jsonl: "json",
};

const NUMBER = /0[xX][0-9a-fA-F_]+|\d[\d_]*(?:\.\d[\d_]*)?(?:[eE][+-]?\d+)?/y;
const WORD = /[A-Za-z_$][\w$]*/y;

function escape(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

function at(pattern: RegExp, code: string, i: number): string | undefined {
  pattern.lastIndex = i;
  return pattern.exec(code)?.[0] || undefined;
}

// The code as HTML with <span class="hl-…"> around its tokens, or "" for a language it does not
// know (markdown-it then escapes the code itself).
export function highlight(code: string, language: string): string {
  const family = FAMILIES[ALIASES[language.trim().toLowerCase()] ?? ""];
  if (!family) return "";
  let out = "";
  let plain = "";
  const flush = () => { out += escape(plain); plain = ""; };
  const token = (kind: string, text: string) => { flush(); out += `<span class="hl-${kind}">${escape(text)}</span>`; };
  let i = 0;
  while (i < code.length) {
    const comment = at(family.comment, code, i);
    const string = !comment && at(family.strings, code, i);
    const previous = code[i - 1] ?? " ";
    const number = !comment && !string && !/[\w$]/.test(previous) && at(NUMBER, code, i);
    const word = !comment && !string && !number && !/[\w$]/.test(previous) && at(WORD, code, i);
    if (comment) token("c", comment);
    else if (string) token("s", string);
    else if (number) token("n", number);
    else if (word && family.keywords.has(word)) token("k", word);
    else if (word && family.literals.has(word)) token("l", word);
    else if (word) plain += word;
    else plain += code[i];
    i += (comment || string || number || word || code[i]).length;
  }
  flush();
  return out;
}
