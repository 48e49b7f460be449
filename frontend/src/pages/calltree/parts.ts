import type { CallTree } from "../../api/calltree";

type Part = CallTree["parts"][number];

/** What the tree is made of: one part, or every part of a process (a node's rank). */
export type Source = { part: number } | { rank: number; node: string };

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

/** The choices of the Part list: a process with several parts (a collector job's chunks) is
 * offered whole, its parts summed, before each of them. */
export function sourceOptions(parts: Part[]): { value: string; label: string }[] {
  const options: { value: string; label: string }[] = [];
  const offered = new Set<string>();
  for (const part of parts) {
    const siblings = parts.filter((p) => p.node === part.node && p.rank === part.rank);
    const process = sourceValue({ rank: part.rank, node: part.node });
    if (siblings.length > 1 && !offered.has(process)) {
      offered.add(process);
      options.push({
        value: process,
        label: `${part.node} rank ${part.rank} · all ${siblings.length} parts`,
      });
    }
    options.push({ value: sourceValue({ part: part.id }), label: partLabel(part, parts) });
  }
  return options;
}

export function sourceValue(source: Source): string {
  return "part" in source ? `part:${source.part}` : `rank:${source.rank}:${source.node}`;
}

export function parseSource(value: string): Source {
  const [kind, first, ...node] = value.split(":");
  return kind === "part" ? { part: Number(first) } : { rank: Number(first), node: node.join(":") };
}

/** What the tree shown is made of. */
export function sourceOf(data: CallTree): Source | null {
  if (data.part !== null) return { part: data.part };
  if (data.rank !== null && data.node !== null) return { rank: data.rank, node: data.node };
  return null;
}
