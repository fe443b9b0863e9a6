"""Agents under test: `--agent reference | dir:PATH | litellm:MODEL | a2a:URL | repair:INNER:N`.

See docs/agents.md for what each is sent and what it may answer."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hpcbench.agents.base import Agent
from hpcbench.agents.dir_agent import reserved_agent_names
from hpcbench.errors import HpcbenchError
from hpcbench.problem import ProblemBundle


@dataclass
class AgentOptions:
    base_url: str | None = None
    api_key: str | None = None
    max_tokens: int = 32000
    timeout_s: float = 900.0
    site: str = "local"


def make_agent(spec: str, bundles: dict[str, ProblemBundle], known: set[str], opts: AgentOptions,
               sandbox_factory=None) -> Agent:
    """An agent from its --agent spelling; HpcbenchError says what is accepted."""
    try:
        return _make(spec, bundles, known, opts, sandbox_factory)
    except ValueError as e:
        raise HpcbenchError(f"--agent {spec!r}: {e}") from None


def _make(spec: str, bundles: dict[str, ProblemBundle], known: set[str], opts: AgentOptions,
          sandbox_factory=None) -> Agent:
    if spec == "reference":
        from hpcbench.agents.dir_agent import ReferenceAgent

        return ReferenceAgent(bundles)
    if spec == "samples":
        from hpcbench.agents.dir_agent import DirAgent
        from hpcbench.resources import data_path

        return DirAgent(data_path("examples") / "submissions", known)
    if spec.startswith("dir:"):
        from hpcbench.agents.dir_agent import DirAgent

        return DirAgent(Path(spec[4:]), known)
    if spec.startswith("litellm:"):
        from hpcbench.agents.litellm_agent import LitellmAgent

        return LitellmAgent(spec[len("litellm:"):], base_url=opts.base_url, api_key=opts.api_key,
                            max_tokens=opts.max_tokens, request_timeout_s=opts.timeout_s)
    if spec.startswith("a2a:"):
        from hpcbench.agents.a2a_agent import A2AAgent

        return A2AAgent(spec[4:], timeout_s=opts.timeout_s)
    if spec.startswith("repair:"):
        from hpcbench.agents.repair_agent import RepairAgent

        inner_spec, _, n = spec[len("repair:"):].rpartition(":")
        if not inner_spec or not n.isdigit():
            raise HpcbenchError(f"--agent {spec!r}: write repair:INNER:N, e.g. repair:litellm:openai/gpt-4o:3")
        inner = _make(inner_spec, bundles, known, opts, sandbox_factory)
        if sandbox_factory is None:
            from hpcbench.agents.sandbox import Sandbox
            from hpcbench.site import load_site

            sandbox = Sandbox.for_site(load_site(opts.site))
        else:
            sandbox = sandbox_factory()
        return RepairAgent(inner, int(n), sandbox)
    raise HpcbenchError(f"--agent {spec!r}: known agents are reference, dir:PATH, litellm:MODEL, a2a:URL, "
                        "repair:INNER:N")


__all__ = ["Agent", "AgentOptions", "make_agent", "reserved_agent_names"]
