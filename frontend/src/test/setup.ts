import "@testing-library/jest-dom/vitest";
import { cleanup } from "@testing-library/react";
import { afterEach, vi } from "vitest";

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  // Modules that need no DOM (file reading, the upload protocol) test under Node.
  if (typeof document !== "undefined") document.cookie = "csrftoken=; expires=Thu, 01 Jan 1970 00:00:00 GMT";
});
