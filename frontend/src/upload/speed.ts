/** Upload speed over the last few seconds, from (time, bytes sent) samples. */
export class SpeedMeter {
  private samples: { atMs: number; bytes: number }[] = [];

  constructor(private readonly windowMs = 5_000) {}

  add(atMs: number, bytes: number): void {
    this.samples.push({ atMs, bytes });
    // Keep one sample older than the window, so the rate spans the whole window.
    while (this.samples.length > 2 && this.samples[1]!.atMs <= atMs - this.windowMs)
      this.samples.shift();
  }

  /** Bytes per second; null until two samples are apart in time. */
  rate(): number | null {
    const first = this.samples[0];
    const last = this.samples[this.samples.length - 1];
    if (!first || !last || last.atMs <= first.atMs) return null;
    return ((last.bytes - first.bytes) * 1000) / (last.atMs - first.atMs);
  }
}

/** "12.3 MB/s" (decimal megabytes, as network speeds are given). */
export function formatSpeed(bytesPerSecond: number): string {
  const mb = bytesPerSecond / 1e6;
  return `${mb >= 10 ? mb.toFixed(0) : mb.toFixed(1)} MB/s`;
}
