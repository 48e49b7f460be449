import type { ReactNode } from "react";
import { Dialog } from "./Dialog";
import { ErrorAlert } from "./Feedback";

type Props = {
  title: string;
  /** What the action does and to what, in the user's words; it says if it cannot be undone. */
  children: ReactNode;
  /** The button's label ("Delete job"), and its label while the action runs ("Deleting…"). */
  confirmLabel: string;
  pendingLabel: string;
  pending: boolean;
  /** The action's failure, shown above the buttons; the dialog stays open to try again. */
  error: unknown;
  onConfirm: () => void;
  onClose: () => void;
};

/** Asks before a destructive action: Cancel (focused first, as Escape does) or the action. */
export function ConfirmDialog({
  title,
  children,
  confirmLabel,
  pendingLabel,
  pending,
  error,
  onConfirm,
  onClose,
}: Props) {
  return (
    <Dialog title={title} onClose={onClose}>
      <p>{children}</p>
      {error != null && <ErrorAlert error={error} />}
      <div className="form-actions">
        <button type="button" className="btn" onClick={onClose}>
          Cancel
        </button>
        <button type="button" className="btn btn-danger" disabled={pending} onClick={onConfirm}>
          {pending ? pendingLabel : confirmLabel}
        </button>
      </div>
    </Dialog>
  );
}
