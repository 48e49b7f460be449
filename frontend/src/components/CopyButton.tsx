import { useState } from "react";
import { copyText } from "../lib/clipboard";

/** "Copy" that says whether it worked; where the browser refuses, it asks for a manual copy. */
export function CopyButton({ text, label = "Copy" }: { text: string; label?: string }) {
  const [outcome, setOutcome] = useState<"copied" | "refused" | null>(null);
  return (
    <span className="copy-button">
      <button
        type="button"
        className="btn btn-small"
        onClick={async () => setOutcome((await copyText(text)) ? "copied" : "refused")}
      >
        {label}
      </button>
      {outcome === "copied" && (
        <span className="text-success" role="status">
          Copied.
        </span>
      )}
      {outcome === "refused" && (
        <span className="muted" role="status">
          The browser would not copy: select the text and copy it.
        </span>
      )}
    </span>
  );
}
