// The little of Node that tests running under Node use (the app itself runs in browsers, so the
// project has no Node types).
declare module "node:fs" {
  export function readFileSync(path: URL): Uint8Array<ArrayBuffer>;
}
declare module "node:zlib" {
  export function gzipSync(data: Uint8Array): Uint8Array<ArrayBuffer>;
}
