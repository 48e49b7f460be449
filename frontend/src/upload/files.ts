/** The files a user dropped or picked, with the path they had inside a dropped or picked folder. */

export type PickedFile = { file: File; path: string };

/**
 * What a folder may hold that is a trace: Kineto JSON (maybe gzipped), a collector chunk, or the
 * XPlane profile TensorFlow and JAX write (`plugins/profile/<run>/<host>.xplane.pb`).
 */
const TRACE_NAME = /\.(json|json\.gz|pcol|xplane\.pb)$/i;
// JAX writes the same events beside <host>.xplane.pb as <host>.trace.json.gz: one is sent.
const XPLANE_COPY = /\.trace\.json\.gz$/i;

export function isTraceName(name: string): boolean {
  return TRACE_NAME.test(name);
}

/**
 * Files named one by one are kept whatever their name (the server says what it cannot read);
 * files found in a folder only when they look like traces. They come sorted by path, numbers in
 * order (rank-2 before rank-10), which is the order files without a rank take ranks in.
 */
export function keepTraces(picked: PickedFile[]): { traces: PickedFile[]; skipped: number } {
  const traces: PickedFile[] = [];
  const paths = new Set(picked.map((item) => item.path));
  let skipped = 0;
  for (const item of picked) {
    const inFolder = item.path.includes("/");
    const xplane = item.path.replace(XPLANE_COPY, ".xplane.pb");
    if (inFolder && XPLANE_COPY.test(item.path) && paths.has(xplane)) continue;
    if (!inFolder || isTraceName(item.file.name)) traces.push(item);
    else skipped += 1;
  }
  traces.sort((a, b) => a.path.localeCompare(b.path, "en", { numeric: true }));
  return { traces, skipped };
}

/** Files from an `<input type="file">`, with their folder path when a folder was picked. */
export function filesFromInput(list: FileList | null): PickedFile[] {
  return Array.from(list ?? [], (file) => ({ file, path: file.webkitRelativePath || file.name }));
}

/**
 * Files of a drop, walking dropped folders. The entries are taken before the first await: the
 * browser empties a DataTransfer once its event handler returns.
 */
export async function filesFromDrop(transfer: DataTransfer): Promise<PickedFile[]> {
  const entries: (FileSystemEntry | File)[] = [];
  for (const item of Array.from(transfer.items ?? [])) {
    if (item.kind !== "file") continue;
    const entry = item.webkitGetAsEntry?.();
    const file = item.getAsFile();
    if (entry?.isDirectory) entries.push(entry);
    else if (file) entries.push(file);
  }
  if (entries.length === 0) entries.push(...Array.from(transfer.files ?? []));
  const found: PickedFile[] = [];
  for (const entry of entries) {
    if (entry instanceof File) found.push({ file: entry, path: entry.name });
    else await walk(entry as FileSystemDirectoryEntry, entry.name, found);
  }
  return found;
}

async function walk(
  directory: FileSystemDirectoryEntry,
  path: string,
  found: PickedFile[],
): Promise<void> {
  const reader = directory.createReader();
  for (;;) {
    // readEntries answers in batches; an empty batch ends the folder.
    const batch = await new Promise<FileSystemEntry[]>((resolve, reject) =>
      reader.readEntries(resolve, reject),
    );
    if (batch.length === 0) return;
    for (const entry of batch) {
      const inner = `${path}/${entry.name}`;
      if (entry.isDirectory) await walk(entry as FileSystemDirectoryEntry, inner, found);
      else {
        const file = await new Promise<File>((resolve, reject) =>
          (entry as FileSystemFileEntry).file(resolve, reject),
        );
        found.push({ file, path: inner });
      }
    }
  }
}
