import { type FormEvent, useState } from "react";
import { useMe } from "../../api/auth";
import { ApiError } from "../../api/client";
import { useAppSettings, useUpdateAppSettings } from "../../api/settings";
import type { AppSettings } from "../../api/types";
import { ErrorAlert, FieldErrors, Loading } from "../../components/Feedback";
import { SaveActions } from "../../components/SaveActions";
import { useNow } from "../../lib/useNow";
import { DiskUse } from "./DiskUse";
import { RetentionSettings } from "./RetentionSettings";
import { shutdownSummary } from "./summary";

export function SettingsPage() {
  const settings = useAppSettings();
  const me = useMe();
  return (
    <>
      <h1>Settings</h1>
      {settings.isPending && <Loading what="settings" />}
      {settings.isError && <ErrorAlert error={settings.error} />}
      {settings.data && (
        <AutoShutdownSettings saved={settings.data} canEdit={Boolean(me.data?.is_staff)} />
      )}
      {settings.data && me.data?.is_staff && <RetentionSettings saved={settings.data} />}
      <DiskUse />
    </>
  );
}

function AutoShutdownSettings({ saved, canEdit }: { saved: AppSettings; canEdit: boolean }) {
  const update = useUpdateAppSettings();
  const nowMs = useNow();
  const [enabled, setEnabled] = useState(Boolean(saved.auto_shutdown_enabled));
  const [hours, setHours] = useState(String(saved.auto_shutdown_hours ?? ""));
  const [justSaved, setJustSaved] = useState(false);
  const [notANumber, setNotANumber] = useState(false);
  const fieldErrors = update.error instanceof ApiError ? update.error.fieldErrors : {};
  const hoursErrors = notANumber
    ? ["Enter the threshold as a number of hours, e.g. 2 or 0.5."]
    : (fieldErrors.auto_shutdown_hours ?? []);
  const enabledErrors = fieldErrors.auto_shutdown_enabled ?? [];
  const otherError = update.isError && !hoursErrors.length && !enabledErrors.length;

  const submit = (event: FormEvent) => {
    event.preventDefault();
    setJustSaved(false);
    const threshold = hours.trim() === "" ? Number.NaN : Number(hours);
    // Only whether it is a number is checked here; the server owns the allowed range.
    setNotANumber(!Number.isFinite(threshold));
    if (!Number.isFinite(threshold)) return;
    update.mutate(
      { auto_shutdown_enabled: enabled, auto_shutdown_hours: threshold },
      {
        onSuccess: (stored) => {
          setEnabled(Boolean(stored.auto_shutdown_enabled));
          setHours(String(stored.auto_shutdown_hours ?? ""));
          setJustSaved(true);
        },
      },
    );
  };

  return (
    <section className="card settings-card" aria-labelledby="shutdown-heading">
      <h2 id="shutdown-heading">Idle auto-shutdown</h2>
      <p className="settings-summary" data-testid="shutdown-summary">
        {shutdownSummary(saved, nowMs)}
      </p>
      <p className="muted">
        When nobody has used the app (in the browser or through the API) for longer than the
        threshold, it shuts down cleanly and keeps all data; start it again with{" "}
        <code>make run</code>. Uploads from training jobs do not count as activity.
      </p>
      {!canEdit && (
        <p className="notice" role="note">
          Only administrators can change these settings.
        </p>
      )}
      <form onSubmit={submit} noValidate>
        <label className="checkbox-field">
          <input
            type="checkbox"
            name="auto_shutdown_enabled"
            checked={enabled}
            disabled={!canEdit}
            onChange={(event) => {
              setEnabled(event.target.checked);
              setJustSaved(false);
            }}
          />
          Enable application auto-shutdown
        </label>
        <FieldErrors messages={enabledErrors} />
        <label className="field field-narrow">
          <span>Auto-shutdown threshold (hours)</span>
          <input
            type="number"
            name="auto_shutdown_hours"
            inputMode="decimal"
            step="any"
            value={hours}
            disabled={!canEdit}
            aria-invalid={hoursErrors.length > 0}
            onChange={(event) => {
              setHours(event.target.value);
              setJustSaved(false);
            }}
          />
        </label>
        <FieldErrors messages={hoursErrors} />
        {otherError && <ErrorAlert error={update.error} />}
        {canEdit && <SaveActions label="Save" pending={update.isPending} saved={justSaved} />}
      </form>
    </section>
  );
}
