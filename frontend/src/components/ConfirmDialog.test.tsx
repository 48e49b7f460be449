import { render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import { ConfirmDialog } from "./ConfirmDialog";

function renderDialog(overrides: Partial<Parameters<typeof ConfirmDialog>[0]> = {}) {
  const onConfirm = vi.fn();
  const onClose = vi.fn();
  render(
    <ConfirmDialog
      title="Delete run-7?"
      confirmLabel="Delete job"
      pendingLabel="Deleting…"
      pending={false}
      error={null}
      onConfirm={onConfirm}
      onClose={onClose}
      {...overrides}
    >
      This deletes <strong>run-7</strong>. This cannot be undone.
    </ConfirmDialog>,
  );
  return { onConfirm, onClose };
}

describe("ConfirmDialog", () => {
  it("names the action in its title and body, with Cancel focused first", () => {
    renderDialog();
    const dialog = screen.getByRole("dialog", { name: "Delete run-7?" });
    expect(dialog).toHaveTextContent("This deletes run-7. This cannot be undone.");
    expect(screen.getByRole("button", { name: "Cancel" })).toHaveFocus();
    expect(screen.queryByRole("alert")).not.toBeInTheDocument();
  });

  it("runs the action on its button and closes on Cancel or Escape without running it", async () => {
    const user = userEvent.setup();
    const { onConfirm, onClose } = renderDialog();
    await user.click(screen.getByRole("button", { name: "Cancel" }));
    await user.keyboard("{Escape}");
    expect(onClose).toHaveBeenCalledTimes(2);
    expect(onConfirm).not.toHaveBeenCalled();
    await user.click(screen.getByRole("button", { name: "Delete job" }));
    expect(onConfirm).toHaveBeenCalledTimes(1);
  });

  it("disables the action while it runs, under its running label", () => {
    renderDialog({ pending: true });
    expect(screen.getByRole("button", { name: "Deleting…" })).toBeDisabled();
    expect(screen.queryByRole("button", { name: "Delete job" })).not.toBeInTheDocument();
  });

  it("shows the action's failure and stays open to try again", () => {
    renderDialog({ error: new Error("You may not delete another user's job.") });
    expect(screen.getByRole("alert")).toHaveTextContent("You may not delete another user's job.");
    expect(screen.getByRole("button", { name: "Delete job" })).toBeEnabled();
  });
});
