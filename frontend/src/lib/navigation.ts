/** Only same-app paths: a crafted ?next=//evil.example must not send people elsewhere. */
export function safeNext(next: string | null): string {
  return next && next.startsWith("/") && !next.startsWith("//") && !next.startsWith("/login")
    ? next
    : "/profiles";
}

/** The shareable link of a comparison of job `b` against baseline `a` (read by the compare page). */
export function compareLink(a: number, b: number): string {
  return `/compare?${new URLSearchParams({ a: String(a), b: String(b) }).toString()}`;
}
