import { useMe } from "../api/auth";
import { useSetJobWindow } from "../api/jobs";
import type { JobWindow, TrainingJob, WindowKind } from "../api/types";
import { canChange } from "../lib/jobs";
import { ErrorAlert } from "./Feedback";
import { useWindowCaption, windowName, windowSentence } from "../lib/window";
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

/** The switch between the whole trace and its complete steps: each viewer's own window of the
 * job. The owner's choice is the default of everyone who has not chosen. */
export function WindowSwitch({ job, window }: { job: TrainingJob; window?: JobWindow | null }) {
  const setWindow = useSetJobWindow(job.id);
  const me = useMe();
  const setsDefault = canChange(job, me.data);
  const current = setWindow.isPending
    ? setWindow.variables
    : (window?.window ?? job.window ?? job.default_window);
  const own = !setsDefault && current !== job.default_window;
  const whose = setsDefault
    ? " Your choice is also the default of teammates who have not chosen their own."
    : ` Your choice is yours only; the owner's default is ${windowName(job.default_window)}.`;
  return (
    <div className="window-switch">
      <label title={WINDOW_HELP + whose}>
        Window{" "}
        <select
          value={current}
          disabled={setWindow.isPending}
          onChange={(e) => setWindow.mutate(e.target.value as WindowKind)}
        >
          <option value="whole_trace">Whole trace</option>
          <option value="complete_steps">Complete steps</option>
        </select>
      </label>
      {window && <span className="muted window-label">{windowSentence(window)}</span>}
      {own && (
        <span className="window-own" data-testid="window-own">
          Your own window: the owner{job.owner ? ` (${job.owner})` : ""} shows this job in{" "}
          {windowName(job.default_window)}.
        </span>
      )}
      {setWindow.isError && <ErrorAlert error={setWindow.error} />}
    </div>
  );
}
