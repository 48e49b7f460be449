"""profiler-app collector: annotate a PyTorch training script, capture and upload its profile.

    import collector
    collector.configure(collector.Config(job_name="resnet-run-7"))
    collector.start_profiling()
    for i, batch in enumerate(loader):
        with collector.annotate(f"step_{i}"):
            ...
    collector.stop_profiling()

Only the standard library, numpy, psutil, pynvml and requests are needed (torch for capture).
"""

from collector.config import Config
from collector.profiler import Profiler, annotate


def configure(config: Config | None = None) -> None:
    Profiler.instance().configure(config)


def start_profiling() -> None:
    Profiler.instance().start_profiling()


def stop_profiling() -> None:
    Profiler.instance().stop_profiling()


def annotation_begin(name: str) -> None:
    Profiler.instance().annotation_begin(name)


def annotation_end(name: str) -> None:
    Profiler.instance().annotation_end(name)


def step() -> None:
    """Marks the end of one training step; the steps are recorded as ``step_<n>``."""
    Profiler.instance().step()


__all__ = [
    "Config",
    "Profiler",
    "annotate",
    "annotation_begin",
    "annotation_end",
    "configure",
    "start_profiling",
    "step",
    "stop_profiling",
]
