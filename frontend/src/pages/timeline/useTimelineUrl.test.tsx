import { act, fireEvent, render, screen } from "@testing-library/react";
import { useState } from "react";
import { MemoryRouter, useLocation } from "react-router";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { useInitialTimelineUrl, useTimelineUrlWriter } from "./useTimelineUrl";

/** A page that opens from its link and writes back its selection. */
function Page() {
  const initial = useInitialTimelineUrl();
  const [selection, setSelection] = useState(initial.selection);
  useTimelineUrlWriter({ ...initial, selection });
  return (
    <>
      {["4:18", "4:19"].map((id) => (
        <button key={id} type="button" onClick={() => setSelection(id)}>
          Select {id}
        </button>
      ))}
      <output>{useLocation().search}</output>
    </>
  );
}

describe("timeline URL hooks", () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it("open from the link and write the shown state back once it has settled", () => {
    render(
      <MemoryRouter initialEntries={["/timeline?job=3&t=100_200&ranks=1,0&sel=4:17"]}>
        <Page />
      </MemoryRouter>,
    );
    const address = () => decodeURIComponent(screen.getByRole("status").textContent!);
    expect(address()).toBe("?job=3&t=100_200&ranks=1,0&sel=4:17");
    act(() => void vi.advanceTimersByTime(400));
    // Written back in the one order of writeTimelineUrl, ranks sorted.
    expect(address()).toBe("?job=3&ranks=0,1&t=100_200&sel=4:17");

    fireEvent.click(screen.getByRole("button", { name: "Select 4:18" }));
    fireEvent.click(screen.getByRole("button", { name: "Select 4:19" }));
    act(() => void vi.advanceTimersByTime(399));
    expect(address()).toBe("?job=3&ranks=0,1&t=100_200&sel=4:17");
    act(() => void vi.advanceTimersByTime(1));
    expect(address()).toBe("?job=3&ranks=0,1&t=100_200&sel=4:19");
  });
});
