"""Steps without code: a plain PyTorch loop with only start_profiling() gets its steps from
optimizer.step(), its Kineto windows aligned to them, and a script that marks its own steps
keeps exactly its own."""

import numpy as np
import pytest
import torch
import torch.optim.optimizer as optimizer_module

import collector
from tracefmt.kinds import EventKind

from .helpers import (
    WINDOWS_AT_2_3_AND_8_9,
    ingested_chunks,
    spool_profiler,
    spooled_chunks,
    step_names,
)


@pytest.fixture
def make_profiler(tmp_path, monkeypatch):
    for name in ("PROFILER_SERVER_URL", "PROFILER_JOB_NAME", "PROFILER_CPU_OPERATORS"):
        monkeypatch.delenv(name, raising=False)
    made = []

    def make(**config):
        prof = spool_profiler(tmp_path, job_name="plain", perf_counters=False, **config)
        made.append(prof)
        return prof

    yield make
    for prof in made:
        prof.stop_profiling()


def model_and_optimizer():
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    return model, torch.optim.SGD(model.parameters(), lr=0.01)


def train_step(model, optimizer, accumulate=1):
    for _ in range(accumulate):
        model(torch.randn(8, 16)).sum().backward()
    optimizer.step()
    optimizer.zero_grad()


def stored_steps(spool):
    """Every chunk ingested as the server does: each STEP row's name, and which steps hold the
    optimizer's own operator (Optimizer.step#SGD.step) inside a recorded window."""
    names, with_optimizer = [], set()
    for _, _, reader in ingested_chunks(spool):
        table = reader.read_all(["kind", "name", "step"])
        kind, step = table.column("kind").to_numpy(), table.column("step").to_numpy()
        strings = np.asarray(reader.strings, dtype=object)[table.column("name").to_numpy()]
        names += strings[kind == EventKind.STEP].tolist()
        ops = strings == "Optimizer.step#SGD.step"  # torch records it as a user annotation
        with_optimizer |= set(step[ops].tolist())
    return names, with_optimizer


def test_a_plain_loop_gets_one_step_per_optimizer_step_and_windows_on_them(make_profiler, tmp_path):
    prof = make_profiler(cpu_operators=True, **WINDOWS_AT_2_3_AND_8_9)
    model, optimizer = model_and_optimizer()
    prof.start_profiling()
    for _ in range(12):
        train_step(model, optimizer)
    prof.stop_profiling()

    chunks = spooled_chunks(tmp_path)
    assert step_names(chunks) == [f"step_{i}" for i in range(12)]
    steps = [
        (start, dur)
        for c in chunks
        for start, dur, kind in zip(
            c.events["ev_start_ns"], c.events["ev_dur_ns"], c.events["ev_kind"], strict=True
        )
        if kind == EventKind.STEP
    ]
    # Back to back: each step starts where the one before it ended.
    for (start, dur), (next_start, _) in zip(steps, steps[1:], strict=False):
        assert start + dur == next_start
    names, with_optimizer = stored_steps(tmp_path)
    assert sorted(names, key=lambda s: int(s[5:])) == [f"step_{i}" for i in range(12)]
    # Steps 2-3 and 8-9 recorded, each ending in its own optimizer step, as ProfilerStep ranges
    # of torch.profiler would.
    assert with_optimizer == {2, 3, 8, 9}


def test_gradient_accumulation_counts_optimizer_steps(make_profiler, tmp_path):
    prof = make_profiler()
    model, optimizer = model_and_optimizer()
    prof.start_profiling()
    for _ in range(5):
        train_step(model, optimizer, accumulate=4)
    prof.stop_profiling()
    assert step_names(spooled_chunks(tmp_path)) == [f"step_{i}" for i in range(5)]


def test_with_two_optimizers_the_first_one_marks_the_steps(make_profiler, tmp_path):
    prof = make_profiler()
    generator, g_opt = model_and_optimizer()
    critic, c_opt = model_and_optimizer()
    prof.start_profiling()
    for _ in range(6):
        train_step(generator, g_opt)
        train_step(critic, c_opt)
    prof.stop_profiling()
    assert step_names(spooled_chunks(tmp_path)) == [f"step_{i}" for i in range(6)]


def test_annotated_steps_win_and_are_recorded_once(make_profiler, tmp_path):
    prof = make_profiler()
    model, optimizer = model_and_optimizer()
    prof.start_profiling()
    for i in range(7):
        with collector.annotate(f"step_{i}"):
            train_step(model, optimizer)
    prof.stop_profiling()
    assert step_names(spooled_chunks(tmp_path)) == [f"step_{i}" for i in range(7)]


def test_an_explicit_step_call_after_the_optimizer_wins(make_profiler, tmp_path):
    prof = make_profiler()
    model, optimizer = model_and_optimizer()
    prof.start_profiling()
    for _ in range(7):
        train_step(model, optimizer)
        collector.step()
    prof.stop_profiling()
    assert step_names(spooled_chunks(tmp_path)) == [f"step_{i}" for i in range(7)]


def test_auto_steps_can_be_turned_off(make_profiler, tmp_path):
    prof = make_profiler(auto_steps=False)
    model, optimizer = model_and_optimizer()
    prof.start_profiling()
    for _ in range(4):
        train_step(model, optimizer)
    prof.stop_profiling()
    assert step_names(spooled_chunks(tmp_path)) == []


def test_the_hook_is_there_while_profiling_only(make_profiler, tmp_path):
    def ours():
        hooks = optimizer_module._global_optimizer_post_hooks.values()
        return [h for h in hooks if getattr(h, "__self__", None) is prof._auto_steps]

    prof = make_profiler()
    model, optimizer = model_and_optimizer()
    prof.start_profiling()
    assert len(ours()) == 1
    train_step(model, optimizer)
    prof.stop_profiling()
    assert ours() == []
