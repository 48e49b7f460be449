/**
 * What a shared link holds: the job, the rank filter, the time range, the selection and the
 * expanded tracks. Times are absolute integer nanoseconds, so a link stays valid while more
 * parts of the job arrive.
 */
export type TimelineUrlState = {
  job: number | null;
  /** Ranks shown; null shows all. */
  ranks: number[] | null;
  range: { startNs: string; endNs: string } | null;
  selection: string | null;
  /** Expanded track ids; null means the default expansion. */
  open: string[] | null;
  /** The range selection (shift+drag): its times and the tracks it covers. */
  area: Area | null;
};

export type Area = { startNs: string; endNs: string; tracks: string[] };

const INTEGER = /^-?\d+$/;

function integers(text: string | null): number[] | null {
  if (text === null) return null;
  const values = text
    .split(",")
    .filter((v) => INTEGER.test(v))
    .map(Number);
  return values.length ? [...new Set(values)].sort((a, b) => a - b) : null;
}

function span(text: string | null): { startNs: string; endNs: string } | null {
  const [startNs, endNs] = (text ?? "").split("_");
  return startNs &&
    endNs &&
    INTEGER.test(startNs) &&
    INTEGER.test(endNs) &&
    BigInt(endNs) > BigInt(startNs)
    ? { startNs, endNs }
    : null;
}

export function parseTimelineUrl(params: URLSearchParams): TimelineUrlState {
  const job = params.get("job");
  const range = span(params.get("t"));
  const areaSpan = span(params.get("range"));
  const areaTracks = (params.get("rtracks") ?? "").split(",").filter(Boolean);
  const selection = params.get("sel");
  const open = params.get("open");
  return {
    job: job && /^\d+$/.test(job) ? Number(job) : null,
    ranks: integers(params.get("ranks")),
    range,
    // "<part>:<index>", or "<part>:@<store row>" as insights findings link to an event.
    selection: selection && /^\d+:@?\d+$/.test(selection) ? selection : null,
    open: open === null ? null : open.split(",").filter(Boolean),
    area: areaSpan && areaTracks.length ? { ...areaSpan, tracks: areaTracks } : null,
  };
}

export function writeTimelineUrl(state: TimelineUrlState): URLSearchParams {
  const params = new URLSearchParams();
  if (state.job !== null) params.set("job", String(state.job));
  if (state.ranks) params.set("ranks", state.ranks.join(","));
  if (state.range) params.set("t", `${state.range.startNs}_${state.range.endNs}`);
  if (state.selection) params.set("sel", state.selection);
  if (state.open) params.set("open", state.open.join(","));
  if (state.area) {
    params.set("range", `${state.area.startNs}_${state.area.endNs}`);
    params.set("rtracks", state.area.tracks.join(","));
  }
  return params;
}
