import pytest

from collector.config import ENV_VARS, Config


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
        45,
    )


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
