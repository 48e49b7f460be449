"""The several-host test (test_several_hosts.py) deploys what docker/compose.yml deploys: the
same services, commands and app environment. A service or setting added to one alone fails here.
"""

from pathlib import Path

import yaml

from tests.multihost.deployment import (
    COMPOSE_SERVICES,
    ROLE_COMMANDS,
    WEB_COMMAND,
    compose_environment,
)

COMPOSE = Path(__file__).resolve().parents[2] / "docker" / "compose.yml"


def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def test_every_compose_service_runs_on_a_host():
    assert set(compose()["services"]) == set(COMPOSE_SERVICES)


def test_the_app_hosts_get_compose_environment_and_commands():
    services = compose()["services"]
    environment = compose_environment(
        database_url="postgres://profiler:pw@10.0.0.2:5432/profiler",
        redis_url="redis://10.0.0.3:6379/0",
        s3_endpoint="http://10.0.0.4:9000",
        web_url="http://10.0.0.5:8000",
        secret_key="key",
    )
    for name in ("web", "sweeper", "beat"):
        assert set(services[name]["environment"]) == set(environment), name
    # The worker adds its concurrency, which the worker hosts set.
    assert set(services["worker"]["environment"]) == {*environment, "WORKER_CONCURRENCY"}
    assert services["web"]["command"] == WEB_COMMAND
    for role, command in ROLE_COMMANDS.items():
        assert services[role]["command"] == command
