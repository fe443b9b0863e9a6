"""Errors that name the file, the field and the reason."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError


class HpcbenchError(Exception):
    """Base for errors shown to the user without a traceback."""


class ConfigError(HpcbenchError):
    def __init__(self, path: Path | str, field: str | None, reason: str):
        self.path = Path(path)
        self.field = field
        self.reason = reason
        where = f"{self.path}" + (f": field '{field}'" if field else "")
        super().__init__(f"{where}: {reason}")


def format_validation_error(e: ValidationError) -> tuple[str | None, str]:
    """First error of a pydantic ValidationError as (dotted field path, reason)."""
    errs = e.errors()
    first = errs[0]
    loc = ".".join(str(p) for p in first["loc"]) or None
    reason = first["msg"].removeprefix("Value error, ")  # pydantic's prefix for a validator's own words
    if len(errs) > 1:
        reason += f" (and {len(errs) - 1} more problem{'s' if len(errs) > 2 else ''})"
    return loc, reason


def env_number(name: str, default: float, minimum: float = 0.0, integer: bool = False) -> float:
    """A number from the environment variable `name` (`default` when unset or empty), or a
    ConfigError naming the variable and its value: never a ValueError traceback."""
    import math
    import os

    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw) if integer else float(raw)
    except ValueError:
        raise ConfigError(name, None, f"{raw!r} is not {'an integer' if integer else 'a number'} "
                                      "(environment variable)") from None
    if not math.isfinite(value) or value < minimum:
        raise ConfigError(name, None, f"{raw!r} is below {minimum:g} or not finite (environment variable)")
    return value


class DiskFull(HpcbenchError):
    """The file system holding a campaign filled up: the verb stopped, named with what was kept."""
