import { decodeViewport } from "../model";
import tracks from "./amd_mi250_tracks.json";
import viewport from "./amd_mi250_viewport.json";

/** The bytes of a real viewport payload (the ROCm sample trace, 115 events, 400 px wide). */
export function samplePayload(): ArrayBuffer {
  const text = atob(viewport.base64);
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  return bytes.buffer;
}

export const sampleTracks = tracks;

export function sampleData() {
  return decodeViewport(samplePayload(), tracks.origin_ns);
}
