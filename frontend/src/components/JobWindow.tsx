import { useMe } from "../api/auth";
import { useSetJobWindow } from "../api/jobs";
import type { JobWindow, TrainingJob, WindowKind } from "../api/types";
import { canChange } from "../lib/jobs";
import { ErrorAlert } from "./Feedback";
import { useWindowCaption, windowSentence } from "../lib/window";
import "./JobWindow.css";

const WINDOW_HELP =
  "Whole trace: every event. Complete steps: each trace without its last profiler step, which " +
  "the profiler cuts short (as Holistic Trace Analysis reads traces). Every page of the job follows.";

/** The window of the enclosing results, as a caption beside a panel's or table's title. */
export function WindowNote() {
  const window = useWindowCaption();
  if (!window) return null;
  return (
    <span className="panel-window" title="The part of the trace these figures cover">
      {window}
    </span>
  );
}

/** The job's window, and the switch between the whole trace and its complete steps. */
export function WindowSwitch({ job, window }: { job: TrainingJob; window?: JobWindow | null }) {
  const setWindow = useSetJobWindow(job.id);
  const me = useMe();
  const mayChange = canChange(job, me.data);
  const current = setWindow.isPending ? setWindow.variables : (window?.window ?? job.window);
  return (
    <div className="window-switch">
      <label title={mayChange ? WINDOW_HELP : `${WINDOW_HELP} Only the job's owner or an administrator can switch it.`}>
        Window{" "}
        <select
          value={current}
          disabled={setWindow.isPending || !mayChange}
          onChange={(e) => setWindow.mutate(e.target.value as WindowKind)}
        >
          <option value="whole_trace">Whole trace</option>
          <option value="complete_steps">Complete steps</option>
        </select>
      </label>
      {window && <span className="muted window-label">{windowSentence(window)}</span>}
      {setWindow.isError && <ErrorAlert error={setWindow.error} />}
    </div>
  );
}
