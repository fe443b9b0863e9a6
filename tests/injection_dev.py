"""Placeholder: the development set for issue 33's rules is written next."""

from __future__ import annotations

DEVELOPMENT: list[tuple[str, str, str, str]] = []
