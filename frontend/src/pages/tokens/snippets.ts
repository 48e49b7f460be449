/**
 * What a person pastes on a training node to send profiles here: the collector's install line,
 * the two variables it reads (PROFILER_SERVER_URL, PROFILER_TOKEN), and how to use it.
 */

export const TOKEN_PLACEHOLDER = "<your token>";

/** A shell word: left bare when it is plainly safe, else in single quotes. */
export function shellWord(value: string): string {
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(value)) return value;
  return `'${value.replaceAll("'", `'"'"'`)}'`;
}

/** The commands for a training node; `token` null puts a placeholder in its place. */
export function shellSnippet(serverUrl: string, token: string | null): string {
  return [
    "pip install 'profiler-app[collector]'",
    `export PROFILER_SERVER_URL=${shellWord(serverUrl)}`,
    `export PROFILER_TOKEN=${shellWord(token ?? TOKEN_PLACEHOLDER)}`,
    "# Upload PyTorch profiler traces you already have, one file per rank:",
    "profiler-collect upload ./log/*.pt.trace.json.gz --job my-first-job",
    "# Or profile a training script while it trains (below):",
    "python train.py",
  ].join("\n");
}

/** The lines a training script adds; the server and token come from the variables above. */
export const PYTHON_SNIPPET = [
  "import collector",
  "collector.start_profiling()",
  "for i, batch in enumerate(loader):",
  '    with collector.annotate(f"step_{i}"):',
  "        ...  # forward, backward, optimizer step",
  "collector.stop_profiling()",
].join("\n");
