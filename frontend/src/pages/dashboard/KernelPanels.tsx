import { useId, useMemo, useState } from "react";
import type { KernelTop } from "../../api/dashboard";
import { PieChart } from "../../charts/PieChart";
import { Panel } from "../../components/Panel";
import { formatCount, formatSeconds } from "../../lib/format";
import { kernelCountSlices, kernelTimeSlices } from "./slices";
import type { GpuTime } from "./slices";
import { DEFAULT_K, MAX_K, parseK } from "./topk";

/** The fixed count of the "top 15" panels, as the product describes them. */
const TOP = 15;

function emptyReason(kernels: KernelTop): string | null {
  return kernels.empty_reason ?? (kernels.top.length ? null : "no GPU kernels");
}

/** The k field: the chart follows every valid value; an invalid one is explained, not applied. */
function KInput({ onK, chart }: { onK: (k: number) => void; chart: string }) {
  const [text, setText] = useState(String(DEFAULT_K));
  const errorId = useId();
  const parsed = parseK(text);
  const error = "error" in parsed ? parsed.error : null;
  return (
    <div className="k-input">
      <label>
        <span>k</span>
        <input
          type="number"
          min={1}
          max={MAX_K}
          step={1}
          value={text}
          aria-label={`${chart}: kernels shown (k)`}
          aria-invalid={error !== null}
          aria-describedby={error ? errorId : undefined}
          onChange={(event) => {
            setText(event.target.value);
            const next = parseK(event.target.value);
            if ("k" in next) onK(next.k);
          }}
        />
      </label>
      {error && (
        <span id={errorId} className="k-error" role="alert">
          {error}
        </span>
      )}
    </div>
  );
}

export function KernelTimePanels({ kernels, gpuTime }: { kernels: KernelTop; gpuTime: GpuTime }) {
  const [k, setK] = useState(DEFAULT_K);
  const all = useMemo(
    () => kernelTimeSlices(kernels, { k, withOther: true, gpuTime }),
    [kernels, k, gpuTime],
  );
  const top = useMemo(
    () => kernelTimeSlices(kernels, { k: TOP, withOther: false, gpuTime }),
    [kernels, gpuTime],
  );
  const empty = emptyReason(kernels);
  const share = `Seconds of run time and % of ${gpuTime.caption}.`;
  return (
    <>
      <Panel
        title="Time spent by all GPU kernels"
        emptyReason={empty}
        actions={!empty && <KInput onK={setK} chart="Time spent by all GPU kernels" />}
        note={
          !empty &&
          `All ${formatCount(kernels.total_count)} kernel runs (${formatSeconds(kernels.total_ns)}): the top ${k} kernels by total time, the rest as Other. ${share}`
        }
      >
        <PieChart codeNames slices={all} label="Time spent by all GPU kernels" />
      </Panel>
      <Panel
        title={`Time spent by the top ${TOP} GPU kernels`}
        emptyReason={empty}
        note={!empty && `The ${TOP} kernels with the most total run time. ${share}`}
      >
        <PieChart codeNames slices={top} label={`Time spent by the top ${TOP} GPU kernels`} />
      </Panel>
    </>
  );
}

export function KernelCountPanels({ kernels }: { kernels: KernelTop }) {
  const [k, setK] = useState(DEFAULT_K);
  const all = useMemo(() => kernelCountSlices(kernels, { k, withOther: true }), [kernels, k]);
  const top = useMemo(() => kernelCountSlices(kernels, { k: TOP, withOther: false }), [kernels]);
  const empty = emptyReason(kernels);
  return (
    <>
      <Panel
        title="Launch counts of all GPU kernels"
        emptyReason={empty}
        actions={!empty && <KInput onK={setK} chart="Launch counts of all GPU kernels" />}
        note={
          !empty &&
          `All ${formatCount(kernels.total_count)} kernel launches: the top ${k} kernels by count, the rest as Other. % of all launches.`
        }
      >
        <PieChart codeNames slices={all} label="Launch counts of all GPU kernels" />
      </Panel>
      <Panel
        title={`Launch counts of the top ${TOP} GPU kernels`}
        emptyReason={empty}
        note={!empty && `The ${TOP} most launched kernels. % of all launches.`}
      >
        <PieChart codeNames slices={top} label={`Launch counts of the top ${TOP} GPU kernels`} />
      </Panel>
    </>
  );
}
