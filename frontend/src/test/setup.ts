import "@testing-library/jest-dom/vitest";
import { cleanup, configure } from "@testing-library/react";
import { afterEach, vi } from "vitest";

// Pages render in a second on an idle machine and several on a loaded one: every findBy/waitFor
// waits for the data, not for a fixed second (testing-library's default).
configure({ asyncUtilTimeout: 30_000 });

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  vi.restoreAllMocks();
  // Modules that need no DOM (file reading, the upload protocol) test under Node.
  if (typeof document !== "undefined")
    document.cookie = "csrftoken=; expires=Thu, 01 Jan 1970 00:00:00 GMT";
});
