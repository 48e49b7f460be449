"""A run's regression verdict against its baseline run, and the causes ranked (pure).

Step time is judged on the per-step durations of every rank, each divided by the baseline's
median step of the same rank (ranks differ steadily: one logs, one waits at each collective), with
the one-sided Mann–Whitney U test: it makes no assumption about the shape of the distribution (step times are skewed by
data-loader stalls and outliers, so a t-test's normality does not hold), it compares two
independent samples of different sizes, and a few slow steps cannot dominate it as they dominate
a mean. A run regresses when its median step (relative to its rank's, pooled over ranks) grew by at least the series' threshold *and* the
test says its steps are longer at the series' significance level: a large change on two noisy
steps, or a significant change of 0.1 %, is no regression.

Causes are sums divided by the run's rank-steps (each rank's steps, summed over ranks), so a run
on twice the GPUs or over twice the steps is compared per unit of work, never by raw totals.
Each cause's change is also given as a share of the baseline's median step.

The U test's p-value is exact (counted over every arrangement of the two samples) when there are
no ties and the samples are small, and otherwise the normal approximation with the tie and
continuity corrections, as ``scipy.stats.mannwhitneyu``'s ``method="auto"`` does; scipy is not a
dependency of the server, and the two dozen lines below are all of the test it would bring.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import partial

import numpy as np
import pandas as pd

from tracefmt.names import COMM

TEST_NAME = "Mann–Whitney U (one-sided: the run's steps are longer)"
REGRESSION, NO_REGRESSION, UNJUDGED = "regression", "no_regression", "unjudged"
# The largest product of sample sizes counted exactly (the count table has n1·n2 cells per row).
EXACT_MAX_CELLS = 10_000
MAX_CAUSES = 12

_RUN_SUFFIX = re.compile(r"^(\d+|run\d*|r\d+|v\d+|(?=[a-z]*\d)[0-9a-f]{8,}|none)$", re.IGNORECASE)


def default_series_name(job_name: str) -> str:
    """The job name without its run suffix: ``train-20251126-153012`` → ``train``,
    ``bert-large-run-3`` → ``bert-large``; a name that is all suffix stays whole."""
    tokens = re.split(r"([-_.])", job_name)
    words = tokens[0::2]
    while len(words) > 1 and (_RUN_SUFFIX.match(words[-1]) or words[-1] == ""):
        words.pop()
    kept = len(words) * 2 - 1
    return "".join(tokens[:kept]) or job_name


@dataclass(frozen=True)
class Thresholds:
    """A series' settings: what counts as a regression, and as a cause."""

    step_pct: float = 5.0  # median step time growth (%) that is a regression
    alpha: float = 0.05  # significance level of the U test
    cause_pct: float = 1.0  # a cause moves at least this share (%) of the baseline's median step
    precision_points: float = 5.0  # a precision's share of kernel time moved this many points


@dataclass(frozen=True)
class RunFigures:
    """What the verdict reads of one run, in one window.

    step_ns and step_rank: each step's duration and its rank, aligned (the steps the one step
    time is taken over);
    kernels: name, category, precision, count, total_ns (summed over ranks and devices);
    operators: name, count, self_ns (host self time, summed over ranks).
    """

    job_id: int
    name: str
    ranks: int
    rank_steps: int
    step_ns: np.ndarray
    step_rank: np.ndarray
    # The one step time's wording, as the Dashboard gives it ("median of 16 captured steps").
    step_label: str
    kernels: pd.DataFrame
    operators: pd.DataFrame
    comm_ns: int
    overlap_ns: int
    host_wait_ns: int


@dataclass(frozen=True)
class UTest:
    name: str
    u: float
    p_value: float
    method: str  # "exact" or "asymptotic"
    n_baseline: int
    n_run: int


@dataclass(frozen=True)
class Cause:
    """One reason the run is slower. ``*_ns`` are per step per rank."""

    kind: str
    name: str
    baseline_ns: int
    run_ns: int
    delta_ns: int
    step_share_pct: float  # delta_ns as a share of the baseline's median step
    detail: str
    extra: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Verdict:
    status: str
    reason: str
    threshold_pct: float
    alpha: float
    baseline_median_ns: int | None
    run_median_ns: int | None
    baseline_p95_ns: int | None
    run_p95_ns: int | None
    change_pct: float | None
    test: UTest | None
    causes: tuple[Cause, ...]

    def as_dict(self) -> dict:
        found = asdict(self)
        found["causes"] = list(found["causes"])
        return found


def unjudged(reason: str, thresholds: Thresholds, status: str = UNJUDGED) -> Verdict:
    """A verdict with no figures: there was nothing to compare."""
    return Verdict(
        status,
        reason,
        thresholds.step_pct,
        thresholds.alpha,
        None,
        None,
        None,
        None,
        None,
        None,
        (),
    )


def mann_whitney_greater(baseline: np.ndarray, run: np.ndarray) -> UTest:
    """U of ``run`` against ``baseline`` and the p-value of "run's values tend to be larger"."""
    x = np.asarray(run, dtype=np.float64)
    y = np.asarray(baseline, dtype=np.float64)
    n1, n2 = len(x), len(y)
    both = np.concatenate([x, y])
    ranks = pd.Series(both).rank(method="average").to_numpy()
    u = float(ranks[:n1].sum() - n1 * (n1 + 1) / 2)
    _, tie_counts = np.unique(both, return_counts=True)
    ties = bool((tie_counts > 1).any())
    if not ties and n1 * n2 <= EXACT_MAX_CELLS:
        return UTest(TEST_NAME, u, _exact_upper_tail(n1, n2, u), "exact", n2, n1)
    n = n1 + n2
    mean = n1 * n2 / 2
    tie_term = float((tie_counts**3 - tie_counts).sum()) / (n * (n - 1))
    sd = math.sqrt(n1 * n2 / 12 * ((n + 1) - tie_term))
    if sd == 0:  # every value equal: nothing tends to be larger
        return UTest(TEST_NAME, u, 1.0, "asymptotic", n2, n1)
    z = (u - mean - 0.5) / sd
    return UTest(TEST_NAME, u, 0.5 * math.erfc(z / math.sqrt(2)), "asymptotic", n2, n1)


def _exact_upper_tail(n1: int, n2: int, u: float) -> float:
    """P(U ≥ u) when every arrangement of the n1 + n2 distinct values is equally likely: the
    number of arrangements with each U, by the recurrence c(m, n) = c(m−1, n) shifted by n +
    c(m, n−1) (the largest value belongs to one sample or the other)."""
    # counts[n][k]: arrangements of m (the current row) and n values with U = k.
    counts = [np.zeros(1) for _ in range(n2 + 1)]
    for n in range(n2 + 1):
        counts[n] = np.ones(1)  # m = 0: U is 0
    for _m in range(1, n1 + 1):
        row = [np.ones(1)]  # n = 0: U is 0
        for n in range(1, n2 + 1):
            above = np.concatenate([np.zeros(n), counts[n]])  # the largest is the run's: +n
            left = row[n - 1]
            size = max(len(above), len(left))
            row.append(np.pad(above, (0, size - len(above))) + np.pad(left, (0, size - len(left))))
        counts = row
    table = counts[n2]
    return float(table[int(math.ceil(u)) :].sum() / table.sum())


def smallest_p(n_baseline: int, n_run: int) -> float:
    """The smallest p-value the one-sided test can give with these sample sizes (every run
    step longer than every baseline step): 1 / C(n1 + n2, n1)."""
    return 1.0 / math.comb(n_baseline + n_run, n_run)


def judge(baseline: RunFigures, run: RunFigures, thresholds: Thresholds) -> Verdict:
    """The run's verdict against ``baseline``, both in one window."""
    verdict = partial(_verdict, thresholds, rank_causes(baseline, run, thresholds))
    missing = [r.name for r in (baseline, run) if len(r.step_ns) == 0]
    if missing:
        return verdict(
            UNJUDGED,
            f"No steps in {', '.join(missing)}: step time needs ProfilerStep#n or step_n "
            "annotations.",
        )
    base_med, run_med = _median(baseline.step_ns), _median(run.step_ns)
    base_steps, run_steps = per_rank_relative(baseline, run)
    base_rel, run_rel = float(np.median(base_steps)), float(np.median(run_steps))
    change = round(100.0 * (run_rel - base_rel) / base_rel, 2)
    figures = (base_med, run_med, _p95(baseline.step_ns), _p95(run.step_ns), change)
    floor = smallest_p(len(baseline.step_ns), len(run.step_ns))
    if floor > thresholds.alpha:
        return verdict(
            UNJUDGED,
            f"{len(run.step_ns)} steps against {len(baseline.step_ns)}: too few for the "
            f"Mann–Whitney U test to reach p ≤ {thresholds.alpha:g} (its smallest p is "
            f"{floor:.3g}); profile more steps.",
            figures,
        )
    test = mann_whitney_greater(base_steps, run_steps)
    significant = test.p_value <= thresholds.alpha
    grown = change >= thresholds.step_pct
    summary = (
        f"Step time {_ms(run_med)} ({run.step_label}) against {_ms(base_med)} "
        f"({baseline.step_label}): {change:+.1f} %"
    )
    combined = _how_ranks_combined(baseline, run)
    if grown and significant:
        return verdict(
            REGRESSION,
            f"{summary}, threshold {thresholds.step_pct:g} %, significant "
            f"(p = {test.p_value:.3g} ≤ {thresholds.alpha:g}).{combined}",
            figures,
            test,
        )
    why = (
        f"below the {thresholds.step_pct:g} % threshold"
        if not grown
        else f"not significant (p = {test.p_value:.3g} > {thresholds.alpha:g})"
    )
    return verdict(NO_REGRESSION, f"{summary}, {why}.{combined}", figures, test)


def _verdict(
    thresholds: Thresholds,
    causes: tuple[Cause, ...],
    status: str,
    reason: str,
    figures: tuple[int, int, int, int, float] | None = None,
    test: UTest | None = None,
) -> Verdict:
    base_med, run_med, base_p95, run_p95, change = figures or (None,) * 5
    return Verdict(
        status,
        reason,
        thresholds.step_pct,
        thresholds.alpha,
        base_med,
        run_med,
        base_p95,
        run_p95,
        change,
        test,
        causes,
    )


def per_rank_relative(baseline: RunFigures, run: RunFigures) -> tuple[np.ndarray, np.ndarray]:
    """Both runs' steps, each divided by the baseline's median step of the same rank (of all
    the baseline's ranks for a rank the baseline lacks). A rank that is always slower (the one
    that also logs, or waits at each collective) then neither widens the spread the test sees
    nor, in a run with another mix of ranks, moves the median."""
    overall = float(np.median(baseline.step_ns))
    medians = {
        int(rank): float(np.median(baseline.step_ns[baseline.step_rank == rank]))
        for rank in np.unique(baseline.step_rank)
    }

    def relative(figures: RunFigures) -> np.ndarray:
        scale = np.array([medians.get(int(r), overall) for r in figures.step_rank], np.float64)
        return figures.step_ns.astype(np.float64) / scale

    return relative(baseline), relative(run)


def _how_ranks_combined(baseline: RunFigures, run: RunFigures) -> str:
    if baseline.ranks <= 1 and run.ranks <= 1:
        return ""
    return (
        f" Steps compared per rank ({run.ranks} against {baseline.ranks}): each step divided by "
        "the baseline's median step of its rank, then all ranks' steps pooled."
    )


def rank_causes(baseline: RunFigures, run: RunFigures, thresholds: Thresholds) -> tuple[Cause, ...]:
    """What grew per step per rank, largest first; kernels gone follow, largest first. A
    change under ``cause_pct`` of the baseline's median step is noise, not a cause."""
    reference = _median(baseline.step_ns) if len(baseline.step_ns) else None
    per_a, per_b = max(baseline.rank_steps, 1), max(run.rank_steps, 1)
    floor_ns = (reference or 0) * thresholds.cause_pct / 100

    def cause(kind: str, name: str, a: float, b: float, detail: str, **extra) -> Cause:
        a_ns, b_ns = round(a), round(b)
        share = round(100.0 * (b_ns - a_ns) / reference, 2) if reference else 0.0
        return Cause(kind, name, a_ns, b_ns, b_ns - a_ns, share, detail, extra)

    grew, gone = _kernel_causes(baseline, run, per_a, per_b, floor_ns, cause)
    operators = _per_name(baseline.operators, run.operators, "self_ns", [])
    for row in operators.itertuples(index=False):
        a, b = row.a / per_a, row.b / per_b
        if b - a >= floor_ns:
            kind = "operator_new" if row.count_a == 0 else "operator_grew"
            detail = f"Host self time per step per rank {_ms(a)} → {_ms(b)}."
            grew.append(cause(kind, row.name, a, b, detail))
    exposed_a = (baseline.comm_ns - baseline.overlap_ns) / per_a
    exposed_b = (run.comm_ns - run.overlap_ns) / per_b
    if exposed_b - exposed_a >= floor_ns:
        detail = (
            f"Communication not overlapped with computation per step per rank "
            f"{_ms(exposed_a)} → {_ms(exposed_b)} (overlapped "
            f"{_pct(baseline.overlap_ns, baseline.comm_ns)} → {_pct(run.overlap_ns, run.comm_ns)})."
        )
        grew.append(cause("communication_exposed", "communication", exposed_a, exposed_b, detail))
    wait_a, wait_b = baseline.host_wait_ns / per_a, run.host_wait_ns / per_b
    if wait_b - wait_a >= floor_ns:
        detail = (
            f"GPU streams waiting for the host to launch work (summed over each rank's "
            f"streams), per step per rank "
            f"{_ms(wait_a)} → {_ms(wait_b)}."
        )
        grew.append(cause("host_wait", "host wait", wait_a, wait_b, detail))
    grew.extend(_precision_causes(baseline, run, thresholds, per_a, per_b, cause))
    grew.sort(key=lambda c: (-c.delta_ns, c.kind, c.name))
    gone.sort(key=lambda c: (c.delta_ns, c.name))
    return tuple((grew + gone)[:MAX_CAUSES])


def _kernel_causes(
    baseline: RunFigures,
    run: RunFigures,
    per_a: int,
    per_b: int,
    floor_ns: float,
    cause: Callable[..., Cause],
) -> tuple[list[Cause], list[Cause]]:
    """Kernels new or grown by ``floor_ns`` or more per step per rank, and kernels gone."""
    grew: list[Cause] = []
    gone: list[Cause] = []
    kernels = _per_name(baseline.kernels, run.kernels, "total_ns", ["category", "precision"])
    for row in kernels.itertuples(index=False):
        a, b = row.a / per_a, row.b / per_b
        calls = {"baseline_calls": round(row.count_a / per_a, 2)}
        calls["run_calls"] = round(row.count_b / per_b, 2)
        kind_word = "communication kernel" if row.category == COMM else "kernel"
        if row.count_a == 0:
            if b >= floor_ns:
                detail = f"New {kind_word}: {int(row.count_b)} runs, {_ms(b)} per step per rank."
                grew.append(cause("kernel_new", row.name, 0, b, detail, **calls))
        elif row.count_b == 0:
            if a >= floor_ns:
                detail = f"{kind_word.capitalize()} gone: was {_ms(a)} per step per rank."
                gone.append(cause("kernel_gone", row.name, a, 0, detail, **calls))
        elif b - a >= floor_ns:
            detail = f"{kind_word.capitalize()} time per step per rank {_ms(a)} → {_ms(b)}" + (
                f" ({b / a:.1f}×)." if a else "."
            )
            grew.append(cause("kernel_grew", row.name, a, b, detail, **calls))
    return grew, gone


def _precision_causes(baseline, run, thresholds, per_a, per_b, cause) -> list[Cause]:
    """Precisions whose share of kernel time grew by ``precision_points`` or more."""
    a = baseline.kernels.groupby("precision")["total_ns"].sum()
    b = run.kernels.groupby("precision")["total_ns"].sum()
    total_a, total_b = a.sum(), b.sum()
    if not total_a or not total_b:
        return []
    found = []
    for precision in sorted(set(a.index) | set(b.index)):
        share_a = 100.0 * a.get(precision, 0) / total_a
        share_b = 100.0 * b.get(precision, 0) / total_b
        if share_b - share_a >= thresholds.precision_points:
            detail = f"{precision or 'unknown'} kernels {share_a:.1f} % → {share_b:.1f} % of kernel time."
            found.append(
                cause(
                    "precision_mix",
                    precision or "unknown",
                    a.get(precision, 0) / per_a,
                    b.get(precision, 0) / per_b,
                    detail,
                    baseline_share_pct=round(share_a, 2),
                    run_share_pct=round(share_b, 2),
                )
            )
    return found


def _per_name(a: pd.DataFrame, b: pd.DataFrame, value: str, keep: list[str]) -> pd.DataFrame:
    """One row per name: a, b (sums of ``value``), count_a, count_b and the first of ``keep``."""

    def grouped(frame: pd.DataFrame) -> pd.DataFrame:
        agg = {"v": (value, "sum"), "n": ("count", "sum")}
        agg.update({k: (k, "first") for k in keep})
        return frame.groupby("name", sort=True).agg(**agg)

    both = grouped(a).merge(
        grouped(b), how="outer", left_index=True, right_index=True, suffixes=("_a", "_b")
    )
    out = pd.DataFrame(
        {
            "name": both.index,
            "a": both["v_a"].fillna(0).to_numpy(),
            "b": both["v_b"].fillna(0).to_numpy(),
            "count_a": both["n_a"].fillna(0).to_numpy(),
            "count_b": both["n_b"].fillna(0).to_numpy(),
        }
    )
    for k in keep:
        out[k] = both[f"{k}_b"].fillna(both[f"{k}_a"]).to_numpy()
    return out


def _median(values: np.ndarray) -> int:
    return int(np.median(values))


def _p95(values: np.ndarray) -> int:
    return int(np.percentile(values, 95))


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.2f} ms"


def _pct(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.0f} %" if whole else "n/a"
