/**
 * Kernel names as legends show them. Demangled CUDA names run to hundreds of characters of
 * namespaces, parameter lists and lambda paths; what tells kernels apart is the function name
 * and its template arguments (the functor of an elementwise kernel, the tile of a GEMM).
 */

const NOISE = [
  /^void /,
  /\(anonymous namespace\)::/g,
  // PyTorch's dispatch lambdas: "impl(...)::{lambda()#1}::operator()() const::{lambda(float)#1}"
  /::\{lambda\([^)]*\)#\d+\}/g,
  /::operator\(\)\(\) const/g,
  /\b[A-Za-z_]\w*::/g,
];

/** The text without any parenthesised group: parameter lists, at any depth. */
function withoutParameters(text: string): string {
  let depth = 0;
  let out = "";
  for (const char of text) {
    if (char === "(") depth += 1;
    else if (char === ")") depth = Math.max(0, depth - 1);
    else if (depth === 0) out += char;
  }
  return out;
}

/** Cuts the middle out of text longer than `maxChars`, keeping more of its start than its end. */
export function middleEllipsis(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const keep = maxChars - 1;
  const head = Math.ceil(keep * 0.7);
  return `${text.slice(0, head)}…${text.slice(text.length - (keep - head))}`;
}

export function shortKernelName(name: string, maxChars = 80): string {
  const cleaned = NOISE.reduce((text, pattern) => text.replace(pattern, ""), name);
  const short = withoutParameters(cleaned).replace(/\s+/g, " ").trim();
  return middleEllipsis(short || name, maxChars);
}
