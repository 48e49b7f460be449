import react from "@vitejs/plugin-react";
import { defineConfig } from "vitest/config";

// Django serves the built app: index.html at every non-API path, assets under /static/.
// The dev server serves it at / instead, so the router's paths are the same in both.
const backend = "http://127.0.0.1:8000";

export default defineConfig(({ command }) => ({
  base: command === "build" ? "/static/" : "/",
  plugins: [react()],
  build: {
    outDir: "dist",
    emptyOutDir: true,
  },
  server: {
    proxy: {
      "/api": backend,
      "/admin": backend,
    },
  },
  test: {
    environment: "jsdom",
    // One jsdom per worker, not per file: building it was 35 of the suite's 92 s. Each test
    // leaves nothing behind (setup.ts cleans the DOM, stubs, spies and cookies after it).
    isolate: false,
    setupFiles: ["src/test/setup.ts"],
    css: false,
    // A loaded machine (CI beside other work) must not fail a test by the clock.
    testTimeout: 60_000,
  },
}));
