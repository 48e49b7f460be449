import { type FormEvent, useState } from "react";
import { ApiError } from "../../api/client";
import { useUpdateJob } from "../../api/jobChanges";
import type { TrainingJob } from "../../api/types";
import { Dialog } from "../../components/Dialog";
import { ErrorAlert } from "../../components/Feedback";
import { MAX_TAGS, parseTags, TAG_PATTERN } from "../../lib/jobs";

type Props = { job: TrainingJob; onClose: () => void };

/** Rename a job and edit its notes and tags; the server's messages show under each field. */
export function EditJobDialog({ job, onClose }: Props) {
  const update = useUpdateJob();
  const [name, setName] = useState(job.name);
  const [notes, setNotes] = useState(job.notes ?? "");
  const [tagsText, setTagsText] = useState((job.tags ?? []).join(" "));
  const [tagsProblem, setTagsProblem] = useState<string | null>(null);
  const fieldErrors = update.error instanceof ApiError ? update.error.fieldErrors : {};
  const nameErrors = fieldErrors.name ?? [];
  const notesErrors = fieldErrors.notes ?? [];
  const tagsErrors = tagsProblem ? [tagsProblem] : (fieldErrors.tags ?? []);
  const otherError =
    update.isError && !nameErrors.length && !notesErrors.length && !tagsErrors.length;

  const submit = (event: FormEvent) => {
    event.preventDefault();
    const tags = parseTags(tagsText);
    // The same rules as the server's, so a typo is pointed out before anything is sent.
    const bad = tags.find((tag) => !TAG_PATTERN.test(tag));
    const problem = bad
      ? `“${bad}” is not a tag: use up to 40 letters, digits and - _ . : only.`
      : tags.length > MAX_TAGS
        ? `A job has at most ${MAX_TAGS} tags.`
        : null;
    setTagsProblem(problem);
    if (problem) return;
    update.mutate(
      { id: job.id, changes: { name: name.trim(), notes, tags } },
      { onSuccess: onClose },
    );
  };

  return (
    <Dialog title={`Edit ${job.name}`} onClose={onClose}>
      <form onSubmit={submit} noValidate>
        <label className="field">
          <span>Name</span>
          <input
            name="name"
            value={name}
            maxLength={255}
            aria-invalid={nameErrors.length > 0}
            onChange={(event) => setName(event.target.value)}
          />
        </label>
        <Errors messages={nameErrors} />
        <label className="field">
          <span>Tags</span>
          <input
            name="tags"
            value={tagsText}
            placeholder="e.g. nlp a100 lr:0.1"
            aria-invalid={tagsErrors.length > 0}
            aria-describedby="tags-help"
            onChange={(event) => {
              setTagsText(event.target.value);
              setTagsProblem(null);
            }}
          />
        </label>
        <p id="tags-help" className="muted field-help">
          Separate tags with spaces or commas: up to {MAX_TAGS} tags of letters, digits and - _ . :
        </p>
        <Errors messages={tagsErrors} />
        <label className="field">
          <span>Notes</span>
          <textarea
            name="notes"
            rows={5}
            value={notes}
            maxLength={10_000}
            aria-invalid={notesErrors.length > 0}
            onChange={(event) => setNotes(event.target.value)}
          />
        </label>
        <Errors messages={notesErrors} />
        {otherError && <ErrorAlert error={update.error} />}
        <div className="form-actions">
          <button type="button" className="btn" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="btn btn-primary" disabled={update.isPending}>
            {update.isPending ? "Saving…" : "Save changes"}
          </button>
        </div>
      </form>
    </Dialog>
  );
}

function Errors({ messages }: { messages: string[] }) {
  if (!messages.length) return null;
  return (
    <ul className="field-errors" role="alert">
      {messages.map((message) => (
        <li key={message}>{message}</li>
      ))}
    </ul>
  );
}
