import { describe, expect, it } from "vitest";
import { PYTHON_SNIPPET, shellSnippet, shellWord, TOKEN_PLACEHOLDER } from "./snippets";

describe("collector set-up snippets", () => {
  it("fills in the server and a new token", () => {
    const token = "3f9c0a7e".repeat(8);
    expect(shellSnippet("http://profiler.lab:8000", token)).toBe(
      [
        "pip install 'profiler-app[collector]'",
        "export PROFILER_SERVER_URL=http://profiler.lab:8000",
        `export PROFILER_TOKEN=${token}`,
        "# Upload PyTorch profiler traces you already have, one file per rank:",
        "profiler-collect upload ./log/*.pt.trace.json.gz --job my-first-job",
        "# Or profile a training script while it trains (below):",
        "python train.py",
      ].join("\n"),
    );
  });

  it("puts a quoted placeholder where no token was just made", () => {
    const snippet = shellSnippet("https://10.0.0.5", null);
    expect(snippet).toContain("export PROFILER_SERVER_URL=https://10.0.0.5\n");
    expect(snippet).toContain(`export PROFILER_TOKEN='${TOKEN_PLACEHOLDER}'\n`);
  });

  it("quotes what the shell would read otherwise", () => {
    expect(shellWord("http://[::1]:8000")).toBe("'http://[::1]:8000'");
    expect(shellWord("it's")).toBe(`'it'"'"'s'`);
    expect(shellWord("abc123")).toBe("abc123");
  });

  it("shows the lines a training script adds", () => {
    expect(PYTHON_SNIPPET.split("\n")).toEqual([
      "import collector",
      "collector.start_profiling()",
      "for i, batch in enumerate(loader):",
      '    with collector.annotate(f"step_{i}"):',
      "        ...  # forward, backward, optimizer step",
      "collector.stop_profiling()",
    ]);
  });
});
