"""Agents under test: `--agent reference | samples | dir:PATH | litellm:MODEL | a2a:URL | repair:INNER:N`,
or a kind an installed package adds (kinds.py: one dispatcher by the spelling's prefix).

See docs/agents.md for what each is sent and what it may answer."""

from __future__ import annotations

from hpcbench.agents.base import Agent
from hpcbench.agents.kinds import AgentOptions, make_agent


def reserved_agent_names() -> frozenset[str]:
    """Agent names a user's submission tree may not use: `reference` (a submission named so
    would stand in for the bundled references that every check compares against), the
    agent keywords, and every bundled sample agent."""
    from hpcbench.resources import data_path

    samples = data_path("examples") / "submissions"
    bundled = {p.name for p in samples.iterdir() if p.is_dir()} if samples.is_dir() else set()
    return frozenset({"reference", "samples", *bundled})


__all__ = ["Agent", "AgentOptions", "make_agent", "reserved_agent_names"]
