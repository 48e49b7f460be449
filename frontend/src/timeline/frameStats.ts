/** Render times of the last frames (ms) and when data was first drawn (performance.now()). */
export const frameStats = { frames: [] as number[], firstDataPaintMs: null as number | null };

// The benchmark and the browser tests read these from the page.
(globalThis as { timelineFrameStats?: typeof frameStats }).timelineFrameStats = frameStats;
