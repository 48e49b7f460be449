import { type ReactNode, useEffect, useId, useRef } from "react";
import { createPortal } from "react-dom";
import "./Dialog.css";

type Props = {
  title: string;
  onClose: () => void;
  children: ReactNode;
};

/**
 * A modal dialog: the page behind is dimmed and inert to the pointer, Escape or a click outside
 * closes it, and focus starts on its first field (or button) and returns where it was after.
 * It is drawn at the end of the page, whatever opened it (a table cell, say), so that nothing
 * of its opener's layout or style reaches it.
 */
export function Dialog({ title, onClose, children }: Props) {
  const titleId = useId();
  const panel = useRef<HTMLDivElement>(null);
  const latestOnClose = useRef(onClose);
  useEffect(() => {
    latestOnClose.current = onClose;
  });

  useEffect(() => {
    const before = document.activeElement as HTMLElement | null;
    const first = panel.current?.querySelector<HTMLElement>("input, textarea, select, button");
    first?.focus();
    const onKey = (event: KeyboardEvent) => {
      if (event.key === "Escape") latestOnClose.current();
    };
    document.addEventListener("keydown", onKey);
    return () => {
      document.removeEventListener("keydown", onKey);
      before?.focus();
    };
  }, []);

  return createPortal(
    <div
      className="dialog-backdrop"
      onMouseDown={(event) => {
        if (event.target === event.currentTarget) onClose();
      }}
    >
      <div
        ref={panel}
        className="dialog card"
        role="dialog"
        aria-modal="true"
        aria-labelledby={titleId}
      >
        <h2 id={titleId}>{title}</h2>
        {children}
      </div>
    </div>,
    document.body,
  );
}
