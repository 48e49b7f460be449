import { api } from "../../api/client";
import { createUploadJob, setJobStatus } from "../../api/uploads";
import { UploadBatch } from "../../upload/batch";
import { detect } from "../../upload/detect";

/** The browser's one upload batch: it outlives the Profiles page while the user looks around. */
export const uploads = new UploadBatch({
  client: api,
  createJob: createUploadJob,
  setJobStatus,
  detect,
});

// Closing the tab would drop the files: the browser asks first.
const warnOnLeave = (event: BeforeUnloadEvent) => event.preventDefault();
let warning = false;
uploads.subscribe(() => {
  const running = uploads.getSnapshot().running;
  if (running === warning) return;
  warning = running;
  if (running) window.addEventListener("beforeunload", warnOnLeave);
  else window.removeEventListener("beforeunload", warnOnLeave);
});
