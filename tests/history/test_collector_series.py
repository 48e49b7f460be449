"""The collector's series setting: from PROFILER_SERIES, a Config argument or a SageMaker-style
key, and sent with the job."""

from collector.config import ENV_VARS, Config


def test_it_reads_the_series_from_the_environment(monkeypatch):
    monkeypatch.setenv("PROFILER_SERIES", "resnet50")
    assert Config().series == "resnet50"
    assert Config(series="bert").series == "bert"
    assert ENV_VARS["series"] == "PROFILER_SERIES"


def test_it_has_no_series_unless_named(monkeypatch):
    monkeypatch.delenv("PROFILER_SERIES", raising=False)
    assert Config().series is None  # the server names it after the job
    config = Config()
    config.profiler = {"Series": "llama-7b"}
    assert config.series == "llama-7b"
    assert config.profiler["Series"] == "llama-7b"
