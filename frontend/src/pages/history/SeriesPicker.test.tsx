import { QueryClientProvider } from "@tanstack/react-query";
import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import type { Series } from "../../api/history";
import { createQueryClient } from "../../queryClient";
import { FakeApi } from "../../test/fakeApi";
import { SeriesPicker } from "./SeriesPicker";

const PAGE = 50;

function series(id: number, name: string, run_count = 1): Series {
  return {
    id,
    name,
    owner: "alice",
    created_at: "2025-06-01T10:00:00Z",
    run_count,
    baseline: null,
    baseline_name: null,
    can_change: true,
  };
}

/** 87 series, model-01 … model-87, answered by name and page as the server does. */
const ALL = Array.from({ length: 87 }, (_, i) =>
  series(i + 1, `model-${String(i + 1).padStart(2, "0")}`, i % 3),
);

function serve() {
  return new FakeApi().on("GET /api/series/", (_request, url) => {
    const search = (url.searchParams.get("search") ?? "").toLowerCase();
    const found = ALL.filter((s) => s.name.toLowerCase().includes(search));
    const at = Number(url.searchParams.get("page") ?? "1");
    const results = found.slice((at - 1) * PAGE, at * PAGE);
    const next = at * PAGE < found.length ? `/api/series/?page=${at + 1}` : null;
    return { status: 200, body: { count: found.length, next, previous: null, results } };
  });
}

function showPicker(value: Series | null = ALL[0]!) {
  const onChange = vi.fn();
  render(
    <QueryClientProvider client={createQueryClient()}>
      <SeriesPicker value={value} onChange={onChange} />
    </QueryClientProvider>,
  );
  return { onChange, input: screen.getByRole("combobox", { name: "Series" }) };
}

describe("The series picker", () => {
  it("shows the chosen series and lists the first page when opened", async () => {
    serve();
    const { input } = showPicker();
    expect(input).toHaveValue("model-01");
    expect(input).toHaveAttribute("aria-expanded", "false");
    await userEvent.click(input);
    expect(input).toHaveAttribute("aria-expanded", "true");
    const list = await screen.findByRole("listbox", { name: "Series" });
    expect(await within(list).findAllByRole("option")).toHaveLength(50);
    expect(within(list).getAllByRole("option")[1]).toHaveTextContent("model-021 run");
    expect(screen.getByRole("status")).toHaveTextContent("50 of 87 series");
  });

  it("loads the next page with Show more", async () => {
    serve();
    const { input } = showPicker();
    await userEvent.click(input);
    await userEvent.click(await screen.findByRole("button", { name: "Show more" }));
    const list = screen.getByRole("listbox", { name: "Series" });
    expect(await within(list).findByRole("option", { name: /^model-87/ })).toBeInTheDocument();
    expect(within(list).getAllByRole("option")).toHaveLength(87);
    expect(screen.getByRole("status")).toHaveTextContent("87 of 87 series");
    expect(screen.queryByRole("button", { name: "Show more" })).toBeNull();
  });

  it("searches on the server as one types and picks with the keyboard", async () => {
    const api = serve();
    const { input, onChange } = showPicker();
    await userEvent.click(input);
    await userEvent.keyboard("{Control>}a{/Control}DEL-7");
    const list = screen.getByRole("listbox", { name: "Series" });
    const found = await within(list).findAllByRole("option", { name: /^model-7\d/ });
    expect(found.map((o) => o.textContent)).toEqual([
      "model-700 runs",
      "model-711 run",
      "model-722 runs",
      "model-730 runs",
      "model-741 run",
      "model-752 runs",
      "model-760 runs",
      "model-771 run",
      "model-782 runs",
      "model-790 runs",
    ]);
    expect(within(found[0]!).getByText("del-7", { selector: "mark" })).toBeInTheDocument();
    expect(screen.getByRole("status")).toHaveTextContent("10 of 10 series");
    expect(api.sent("GET /api/series/").at(-1)!.url.searchParams.get("search")).toBe("DEL-7");

    await userEvent.keyboard("{ArrowDown}{ArrowDown}");
    expect(input).toHaveAttribute("aria-activedescendant", found[1]!.id);
    expect(found[1]).toHaveAttribute("aria-selected", "true");
    await userEvent.keyboard("{Enter}");
    expect(onChange).toHaveBeenCalledWith(ALL[70]);
    expect(input).toHaveAttribute("aria-expanded", "false");
  });

  it("says when nothing matches and closes on Escape", async () => {
    serve();
    const { input, onChange } = showPicker();
    await userEvent.click(input);
    await userEvent.keyboard("{Control>}a{/Control}llama");
    expect(await screen.findByText("No series matches “llama”.")).toBeInTheDocument();
    await userEvent.keyboard("{Escape}");
    expect(input).toHaveAttribute("aria-expanded", "false");
    expect(input).toHaveValue("model-01");
    expect(onChange).not.toHaveBeenCalled();
  });
});
