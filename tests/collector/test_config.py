import re
from pathlib import Path

import pytest

from collector.config import ENV_VARS, Config

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ENV_VARS.values():
        monkeypatch.delenv(name, raising=False)


def test_it_has_cheap_defaults():
    config = Config()
    assert config.enable_cuda is True
    assert config.cpu_operators is False
    assert config.cpu_sampling is True
    assert config.sampling_interval_ms == 200
    assert config.flush_interval_s == 30
    assert config.server_url is None
    assert (config.kineto_warmup_steps, config.kineto_active_steps, config.kineto_wait_steps) == (
        1,
        4,
        None,  # no fixed schedule: windows are spaced by the overhead budget
    )
    assert config.overhead_budget_pct == 0.5


def test_it_reads_every_setting_from_the_environment(monkeypatch):
    monkeypatch.setenv("PROFILER_ENABLE_CUDA", "0")
    monkeypatch.setenv("PROFILER_CPU_OPERATORS", "yes")
    monkeypatch.setenv("PROFILER_CPU_SAMPLING", "off")
    monkeypatch.setenv("PROFILER_SAMPLING_INTERVAL_MS", "250")
    monkeypatch.setenv("PROFILER_SERVER_URL", "http://profiler:8000/")
    monkeypatch.setenv("PROFILER_TOKEN", "abc")
    monkeypatch.setenv("PROFILER_JOB_NAME", "resnet-7")
    monkeypatch.setenv("PROFILER_KINETO_WAIT_STEPS", "0")
    config = Config()
    assert config.enable_cuda is False
    assert config.cpu_operators is True
    assert config.cpu_sampling is False
    assert config.sampling_interval_ms == 250
    assert config.server_url == "http://profiler:8000"
    assert config.token == "abc"
    assert config.job_name == "resnet-7"
    assert config.kineto_wait_steps == 0


def test_it_lets_arguments_win_over_the_environment(monkeypatch):
    monkeypatch.setenv("PROFILER_JOB_NAME", "from-env")
    assert Config(job_name="from-code").job_name == "from-code"


def test_it_never_lets_an_argument_left_none_hide_the_environment(monkeypatch):
    """`Config(job_name=args.job_name)` with no --job-name keeps PROFILER_JOB_NAME."""
    monkeypatch.setenv("PROFILER_JOB_NAME", "from-env")
    monkeypatch.setenv("PROFILER_SAMPLING_INTERVAL_MS", "250")
    config = Config(job_name=None, server_url=None, sampling_interval_ms=None)
    assert (config.job_name, config.sampling_interval_ms) == ("from-env", 250)
    assert config.server_url is None  # unset everywhere stays unset
    monkeypatch.delenv("PROFILER_SAMPLING_INTERVAL_MS")
    assert Config(sampling_interval_ms=None).sampling_interval_ms == 200  # the default


def test_the_readme_and_the_example_name_variables_the_collector_reads():
    """Every PROFILER_* variable the README or the example tells a training run to set is one
    the collector reads, and the example passes its optional flags through as None."""
    collector_vars = set(ENV_VARS.values()) | {"PROFILER_NODE_NAME"}
    readme = (REPO / "README.md").read_text()
    training = readme[readme.index("## Profiling a training job") :]
    training = training[: training.index("\n## ", 1)]
    example = (REPO / "examples" / "train_cnn.py").read_text()
    for text in (training, example):
        named = set(re.findall(r"PROFILER_[A-Z_]+", text))
        assert named <= collector_vars, named - collector_vars
    assert {"PROFILER_JOB_NAME", "PROFILER_SERVER_URL", "PROFILER_TOKEN"} <= set(
        re.findall(r"PROFILER_[A-Z_]+", training)
    )
    assert "collector.Config(job_name=args.job_name)" in example
    assert 'add_argument("--job-name", help=' in example  # no default: None when not given


def test_it_fails_loudly_on_a_bad_value(monkeypatch):
    monkeypatch.setenv("PROFILER_CPU_SAMPLING", "maybe")
    with pytest.raises(ValueError, match="PROFILER_CPU_SAMPLING='maybe' is not a boolean"):
        Config()
    monkeypatch.setenv("PROFILER_CPU_SAMPLING", "1")
    monkeypatch.setenv("PROFILER_SAMPLING_INTERVAL_MS", "fast")
    with pytest.raises(ValueError, match="is not an integer"):
        Config()


def test_it_accepts_sagemaker_style_keys():
    config = Config()
    config.profiler = {"EnableCuda": "0", "SamplingIntervalMs": "500", "JobName": "albef"}
    assert config.enable_cuda is False
    assert config.sampling_interval_ms == 500
    assert config.job_name == "albef"
    assert config.profiler["EnableCuda"] is False


def test_it_refuses_unknown_keys_and_bad_schedules():
    with pytest.raises(ValueError, match="unknown profiler setting 'EnableTPU'"):
        Config().update({"EnableTPU": "1"})
    with pytest.raises(ValueError, match="kineto_active_steps must be at least 1"):
        Config(kineto_active_steps=0)
    with pytest.raises(ValueError, match="sampling_interval_ms must be at least 10"):
        Config(sampling_interval_ms=1)
