import { type FormEvent, useId, useState } from "react";
import {
  type CustomHistogram,
  useAnnotationDurations,
  useCreateHistogram,
  useCustomHistograms,
  useDeleteHistogram,
} from "../../api/dashboard";
import { ErrorAlert, Loading } from "../../components/Feedback";
import { Panel } from "../../components/Panel";
import { DurationHistogram } from "./DurationHistogram";

type Props = { jobId: number; annotationNames: readonly string[] };

/** The person's own histograms of annotation durations, kept on the server per user and job. */
export function CustomHistograms({ jobId, annotationNames }: Props) {
  const histograms = useCustomHistograms(jobId);
  const remove = useDeleteHistogram(jobId);
  return (
    <>
      {histograms.data?.map((histogram) => (
        <AnnotationHistogramPanel
          key={histogram.id}
          jobId={jobId}
          histogram={histogram}
          removing={remove.isPending && remove.variables === histogram.id}
          onRemove={() => remove.mutate(histogram.id)}
        />
      ))}
      <CreateHistogramPanel
        jobId={jobId}
        annotationNames={annotationNames}
        existing={histograms.data ?? []}
        listError={histograms.error ?? remove.error}
        listLoading={histograms.isPending}
      />
    </>
  );
}

type PanelProps = {
  jobId: number;
  histogram: CustomHistogram;
  removing: boolean;
  onRemove: () => void;
};

function AnnotationHistogramPanel({ jobId, histogram, removing, onRemove }: PanelProps) {
  const name = histogram.annotation_name;
  const durations = useAnnotationDurations(jobId, name);
  const durationsNs = durations.data?.durations_ns;
  return (
    <Panel
      title={`${name} durations`}
      note={`Your histogram of how long each "${name}" annotation took, across all ranks.`}
      emptyReason={durationsNs?.length === 0 ? `no "${name}" annotations in this profile` : null}
      actions={
        <button
          type="button"
          className="btn btn-small btn-danger-quiet"
          onClick={onRemove}
          disabled={removing}
          aria-label={`Remove the ${name} histogram`}
        >
          {removing ? "Removing…" : "Remove"}
        </button>
      }
    >
      {durations.isError && <ErrorAlert error={durations.error} />}
      {durations.isPending && <Loading what={`${name} durations`} />}
      {durationsNs && (
        <DurationHistogram
          durationsNs={durationsNs}
          noun="occurrence"
          label={`${name} durations`}
        />
      )}
    </Panel>
  );
}

type CreateProps = Props & {
  existing: readonly CustomHistogram[];
  listError: Error | null;
  listLoading: boolean;
};

function CreateHistogramPanel({
  jobId,
  annotationNames,
  existing,
  listError,
  listLoading,
}: CreateProps) {
  const create = useCreateHistogram(jobId);
  const [chosen, setChosen] = useState("");
  const selectId = useId();
  const taken = new Set(existing.map((histogram) => histogram.annotation_name));
  const available = annotationNames.filter((name) => !taken.has(name));
  const empty = annotationNames.length === 0 ? "no custom annotations in this profile" : null;

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!chosen) return;
    create.mutate(chosen, { onSuccess: () => setChosen("") });
  };

  return (
    <Panel
      title="Create new histogram"
      emptyReason={empty}
      note="Pick one of the annotations in your training script (e.g. Forward, Backward, Optimizer) to add a histogram of its durations. Your histograms stay on this dashboard for you."
    >
      <form className="histogram-form" onSubmit={submit}>
        <label htmlFor={selectId}>Annotation</label>
        <select
          id={selectId}
          value={chosen}
          onChange={(event) => setChosen(event.target.value)}
          disabled={listLoading || available.length === 0}
        >
          <option value="">
            {available.length ? "Choose an annotation…" : "All annotations have a histogram"}
          </option>
          {available.map((name) => (
            <option key={name} value={name}>
              {name}
            </option>
          ))}
        </select>
        <button type="submit" className="btn btn-primary" disabled={!chosen || create.isPending}>
          {create.isPending ? "Adding…" : "Add histogram"}
        </button>
      </form>
      {create.isError && <ErrorAlert error={create.error} />}
      {listError && <ErrorAlert error={listError} />}
    </Panel>
  );
}
