/**
 * The `meta` of a collector chunk (`tracefmt/chunk.py`): a `.npz` zip whose `meta.npy` member is
 * a uint8 array of UTF-8 JSON (job, node, rank, …). Read through the zip's central directory,
 * so only the directory and that one member leave the disk.
 */

const EOCD_SIGNATURE = 0x06054b50;
const CENTRAL_SIGNATURE = 0x02014b50;
const LOCAL_SIGNATURE = 0x04034b50;
const EOCD_BYTES = 22;
const MAX_COMMENT = 0xffff;
const MAX_META_BYTES = 1 << 20;

/** The chunk's meta object, or null when the file is not a chunk this reader understands. */
export async function readChunkMeta(file: Blob): Promise<Record<string, unknown> | null> {
  try {
    const entry = await findMember(file, "meta.npy");
    if (entry === null || entry.compressedSize > MAX_META_BYTES) return null;
    const local = new DataView(
      await file.slice(entry.localOffset, entry.localOffset + 30).arrayBuffer(),
    );
    if (local.byteLength < 30 || local.getUint32(0, true) !== LOCAL_SIGNATURE) return null;
    const dataStart =
      entry.localOffset + 30 + local.getUint16(26, true) + local.getUint16(28, true);
    const stored = file.slice(dataStart, dataStart + entry.compressedSize);
    const npy =
      entry.method === 0
        ? new Uint8Array(await stored.arrayBuffer())
        : entry.method === 8
          ? new Uint8Array(
              await new Response(
                stored.stream().pipeThrough(new DecompressionStream("deflate-raw")),
              ).arrayBuffer(),
            )
          : null;
    const json = npy && npyBytes(npy);
    if (json === null) return null;
    const meta: unknown = JSON.parse(new TextDecoder().decode(json));
    return meta !== null && typeof meta === "object" && !Array.isArray(meta)
      ? (meta as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

type Member = { method: number; compressedSize: number; localOffset: number };

async function findMember(file: Blob, name: string): Promise<Member | null> {
  const tailStart = Math.max(0, file.size - EOCD_BYTES - MAX_COMMENT);
  const tail = new DataView(await file.slice(tailStart).arrayBuffer());
  let eocd = -1;
  for (let i = tail.byteLength - EOCD_BYTES; i >= 0; i -= 1) {
    if (tail.getUint32(i, true) === EOCD_SIGNATURE) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) return null;
  const size = tail.getUint32(eocd + 12, true);
  const offset = tail.getUint32(eocd + 16, true);
  if (offset === 0xffffffff || offset + size > file.size) return null; // zip64: not a chunk's size
  const directory = new DataView(await file.slice(offset, offset + size).arrayBuffer());
  const decoder = new TextDecoder();
  for (let at = 0; at + 46 <= directory.byteLength;) {
    if (directory.getUint32(at, true) !== CENTRAL_SIGNATURE) return null;
    const nameLength = directory.getUint16(at + 28, true);
    const entryName = decoder.decode(new Uint8Array(directory.buffer, at + 46, nameLength));
    if (entryName === name) {
      return {
        method: directory.getUint16(at + 10, true),
        compressedSize: directory.getUint32(at + 20, true),
        localOffset: directory.getUint32(at + 42, true),
      };
    }
    at += 46 + nameLength + directory.getUint16(at + 30, true) + directory.getUint16(at + 32, true);
  }
  return null;
}

/** The data of a 1-D uint8 `.npy` array (format versions 1–3). */
function npyBytes(npy: Uint8Array): Uint8Array | null {
  const magic = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]; // \x93NUMPY
  if (!magic.every((byte, i) => npy[i] === byte)) return null;
  const view = new DataView(npy.buffer, npy.byteOffset, npy.byteLength);
  const major = npy[6];
  const headerStart = major === 1 ? 10 : 12;
  const headerLength = major === 1 ? view.getUint16(8, true) : view.getUint32(8, true);
  const header = new TextDecoder().decode(npy.subarray(headerStart, headerStart + headerLength));
  if (!/'descr':\s*'\|u1'/.test(header)) return null;
  return npy.subarray(headerStart + headerLength);
}
