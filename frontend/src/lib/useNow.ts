import { useEffect, useState } from "react";

/** The current time, re-read every `intervalMs` so "… ago" texts stay true on an open page. */
export function useNow(intervalMs = 30_000): number {
  const [nowMs, setNowMs] = useState(() => Date.now());
  useEffect(() => {
    const timer = window.setInterval(() => setNowMs(Date.now()), intervalMs);
    return () => window.clearInterval(timer);
  }, [intervalMs]);
  return nowMs;
}
