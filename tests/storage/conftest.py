"""Object storage: a real S3 API (moto's server) on loopback, and this process pointed at it."""

import pytest

from tests.storage import s3


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory):
    with s3.moto_server(tmp_path_factory.mktemp("moto") / "moto.log") as endpoint:
        yield endpoint


@pytest.fixture
def bucket(s3_endpoint) -> str:
    return s3.new_bucket(s3_endpoint)


@pytest.fixture
def in_bucket(s3_endpoint, bucket, settings, monkeypatch, tmp_path):
    """This process keeps profiles in ``bucket`` and caches store files under tmp_path."""
    from profiler_app.lib.bucket_url import django_storage_options

    env = s3.storage_env(s3_endpoint, bucket)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    settings.STORAGE_URL = env["PROFILER_STORAGE_URL"]
    settings.STORE_CACHE_DIR = tmp_path / "cache"
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": django_storage_options(settings.STORAGE_URL),
        },
    }
    return env
