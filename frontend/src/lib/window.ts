import { createContext, useContext } from "react";
import type { JobWindow } from "../api/types";

/** The window of the results inside (its caption), stated beside each panel's title. */
export const WindowCaption = createContext<string | null>(null);

export function useWindowCaption(): string | null {
  return useContext(WindowCaption);
}

/** "Showing complete steps #1–#5 (5 of 6). 1 step dropped: …", and why the switch changes
 * nothing where it does not. */
export function windowSentence(window: JobWindow): string {
  const steps =
    window.window === "whole_trace" && window.steps_total > 0 && !window.switch_note
      ? ` (${window.steps_total} step${window.steps_total === 1 ? "" : "s"})`
      : "";
  const dropped =
    window.steps_dropped > 0
      ? ` ${window.steps_dropped} step${window.steps_dropped === 1 ? "" : "s"} dropped: the last of each trace, which the profiler cuts short; every figure leaves ${window.steps_dropped === 1 ? "it" : "them"} out.`
      : "";
  const note = window.switch_note ? ` ${window.switch_note}` : "";
  return `Showing ${window.label}${steps}.${dropped}${note}`;
}

/** "the whole trace", "complete steps": a window (`whole_trace`, `complete_steps`) in running text. */
export function windowName(window: string): string {
  return window === "whole_trace" ? "the whole trace" : "complete steps";
}
