import { act, cleanup, fireEvent, render, screen } from "@testing-library/react";
import { useEffect } from "react";
import { MemoryRouter, useLocation } from "react-router";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { TrackNode } from "../../timeline/model";
import { useTimelineUrlState } from "./useTimelineUrlState";

const TREE: TrackNode[] = [
  {
    id: "algo-1",
    label: "algo-1",
    kind: "node",
    data: null,
    children: [{ id: "algo-1/1102", label: "PID 1102", kind: "process", data: null }],
  },
];

/** Each new set of open tracks the page was given, in order (a new set rebuilds the layout). */
const openSets: ReadonlySet<string>[] = [];

/** A page that opens from its link and changes what it shows by its buttons. */
function Page() {
  const url = useTimelineUrlState(TREE);
  useEffect(() => void openSets.push(url.open), [url.open]);
  const buttons: [string, () => void][] = [
    ["Select 4:18", () => url.setSelection("4:18")],
    ["Select 4:19", () => url.setSelection("4:19")],
    ["Clear selection", () => url.setSelection(null)],
    ["Rank 2 only", () => url.setRanks([2])],
    ["Pan", () => url.setRange({ startNs: "150", endNs: "250" })],
    ["Shift-drag", () => url.setArea({ startNs: "160", endNs: "170", tracks: ["a/s7"] })],
    ["Toggle process", () => url.toggleOpen("algo-1/1102")],
    ["Open node", () => url.openAll(["algo-1"])],
    ["Open process", () => url.openAll(["algo-1", "algo-1/1102"])],
  ];
  return (
    <>
      {buttons.map(([name, onClick]) => (
        <button key={name} type="button" onClick={onClick}>
          {name}
        </button>
      ))}
      <output>{useLocation().search}</output>
      <span data-testid="initial">{JSON.stringify(url.initialRange)}</span>
      <span data-testid="open">{[...url.open].join(" ")}</span>
    </>
  );
}

function open(link: string) {
  render(
    <MemoryRouter initialEntries={[link]}>
      <Page />
    </MemoryRouter>,
  );
}

const address = () => decodeURIComponent(screen.getByRole("status").textContent!);
const click = (name: string) => fireEvent.click(screen.getByRole("button", { name }));
const settle = (ms = 400) => act(() => void vi.advanceTimersByTime(ms));

describe("useTimelineUrlState", () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it("opens from the link and writes the shown state back once it has settled", () => {
    open("/timeline?job=3&t=100_200&ranks=1,0&sel=4:17&open=algo-1");
    expect(address()).toBe("?job=3&t=100_200&ranks=1,0&sel=4:17&open=algo-1");
    expect(screen.getByTestId("initial")).toHaveTextContent('{"startNs":"100","endNs":"200"}');
    settle();
    // Written back in the one order of writeTimelineUrl, ranks sorted; the path names the job.
    expect(address()).toBe("?ranks=0,1&t=100_200&sel=4:17&open=algo-1");

    click("Select 4:18");
    click("Select 4:19");
    settle(399);
    expect(address()).toBe("?ranks=0,1&t=100_200&sel=4:17&open=algo-1");
    settle(1);
    expect(address()).toBe("?ranks=0,1&t=100_200&sel=4:19&open=algo-1");
  });

  it("round-trips every change into a link that opens on the same state", () => {
    open("/timeline");
    // No link: the default expansion (down to the first process), the whole job.
    expect(screen.getByTestId("open").textContent).toBe("algo-1 algo-1/1102");
    expect(screen.getByTestId("initial")).toHaveTextContent("null");
    for (const name of ["Rank 2 only", "Pan", "Shift-drag", "Select 4:18", "Toggle process"])
      click(name);
    settle();
    const link = address();
    expect(link).toBe("?ranks=2&t=150_250&sel=4:18&open=algo-1&range=160_170&rtracks=a/s7");
    click("Toggle process");
    click("Clear selection");
    settle();
    expect(address()).toBe("?ranks=2&t=150_250&open=algo-1,algo-1/1102&range=160_170&rtracks=a/s7");

    cleanup();
    open(`/timeline${link}`);
    settle();
    expect(address()).toBe(link);
    expect(screen.getByTestId("open").textContent).toBe("algo-1");
  });

  it("opens tracks (a selection's ancestors) as a new set only when one was closed", () => {
    open("/timeline?open=algo-1");
    openSets.length = 0;
    click("Open node");
    expect(openSets).toHaveLength(0);
    click("Open process");
    expect(openSets).toHaveLength(1);
    expect([...openSets[0]!]).toEqual(["algo-1", "algo-1/1102"]);
    click("Open process");
    click("Toggle process");
    expect(openSets).toHaveLength(2);
    expect([...openSets[1]!]).toEqual(["algo-1"]);
  });
});
