import type { CallTree } from "../../api/calltree";

type Part = CallTree["parts"][number];

/** "algo-1 rank 0"; where a rank has several parts (a collector job's chunks), each also says
 * where its events lie from the job's first event: "vm rank 0 · 8.61–8.92 s". */
export function partLabel(part: Part, parts: Part[]): string {
  const name = `${part.node} rank ${part.rank}`;
  const shared = parts.some(
    (p) => p.id !== part.id && p.node === part.node && p.rank === part.rank,
  );
  if (!shared || part.offset_ns === null || part.span_ns === null) return name;
  const seconds = (ns: number) => (ns / 1e9).toFixed(2);
  return `${name} · ${seconds(part.offset_ns)}–${seconds(part.offset_ns + part.span_ns)} s`;
}
