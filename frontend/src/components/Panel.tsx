import { type ReactNode, useId } from "react";
import { WindowNote } from "./JobWindow";
import "./Panel.css";

type Props = {
  title: string;
  /** What the panel counts, in a sentence: how to read it. */
  note?: ReactNode;
  /** Controls beside the title (e.g. the k input, a remove button). */
  actions?: ReactNode;
  /** Why the panel has nothing to draw; shown instead of the chart. */
  emptyReason?: string | null;
  /** Columns of the dashboard grid: narrow for two-slice pies, wide for time series. */
  size?: "narrow" | "normal" | "wide";
  children?: ReactNode;
};

export function Panel({ title, note, actions, emptyReason, size = "normal", children }: Props) {
  const headingId = useId();
  return (
    <section className={`card panel panel-${size}`} aria-labelledby={headingId}>
      <div className="panel-header">
        <h3 id={headingId}>{title}</h3>
        <WindowNote />
        {actions && <div className="panel-actions">{actions}</div>}
      </div>
      {note && <p className="panel-note">{note}</p>}
      {emptyReason ? <p className="panel-empty">{sentence(emptyReason)}</p> : children}
    </section>
  );
}

/** The server words reasons for use mid-sentence ("no steps annotated"); a panel shows one alone. */
function sentence(reason: string): string {
  const text = reason.charAt(0).toUpperCase() + reason.slice(1);
  return /[.!?]$/.test(text) ? text : `${text}.`;
}
