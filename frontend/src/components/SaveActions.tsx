/** A settings form's save button, and "Saved." once the last save went through. */
export function SaveActions({
  label,
  pending,
  saved,
}: {
  label: string;
  pending: boolean;
  saved: boolean;
}) {
  return (
    <div className="form-actions">
      <button type="submit" className="btn btn-primary" disabled={pending}>
        {pending ? "Saving…" : label}
      </button>
      {saved && (
        <span className="text-success" role="status">
          Saved.
        </span>
      )}
    </div>
  );
}
