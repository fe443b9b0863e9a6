"""Agents under test: `--agent reference | samples | dir:PATH | litellm:MODEL | a2a:URL | repair:INNER:N`,
or a kind an installed package adds (kinds.py: one dispatcher by the spelling's prefix).

See docs/agents.md for what each is sent and what it may answer."""

from __future__ import annotations

from hpcbench.agents.base import Agent
from hpcbench.agents.dir_agent import reserved_agent_names
from hpcbench.agents.kinds import AgentOptions, make_agent

__all__ = ["Agent", "AgentOptions", "make_agent", "reserved_agent_names"]
