/** Only same-app paths: a crafted ?next=//evil.example must not send people elsewhere. */
export function safeNext(next: string | null): string {
  return next && next.startsWith("/") && !next.startsWith("//") && !next.startsWith("/login")
    ? next
    : "/profiles";
}
