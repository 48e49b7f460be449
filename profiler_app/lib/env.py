"""Settings come from the environment only; a bad value fails loudly at start-up."""

import os
from pathlib import Path


class BadSetting(ValueError):
    pass


def envstr(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def envbool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise BadSetting(f"{name}={raw!r} is not a boolean (use true/false)")


def envint(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise BadSetting(f"{name}={raw!r} is not an integer") from None


def envfloat(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise BadSetting(f"{name}={raw!r} is not a number") from None


def envpath(name: str, default: Path) -> Path:
    raw = os.environ.get(name)
    return Path(raw).resolve() if raw else default.resolve()


def envlist(name: str) -> list[str]:
    """Comma-separated values, blanks around them dropped."""
    return [item.strip() for item in os.environ.get(name, "").split(",") if item.strip()]
