import type { AppSettings } from "../../api/types";
import { formatAgo, formatDateTime, formatHours } from "../../lib/format";

export function shutdownSummary(settings: AppSettings, nowMs: number): string {
  const activity = `last activity ${formatDateTime(settings.last_activity_at)} (${formatAgo(
    settings.last_activity_at,
    nowMs,
  )})`;
  if (!settings.auto_shutdown_enabled) return `Auto-shutdown is off; ${activity}.`;
  return `Shuts down after ${formatHours(settings.auto_shutdown_hours ?? 0)} idle; ${activity}.`;
}
