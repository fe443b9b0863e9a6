"""Agent kinds by the prefix of their --agent spelling (`litellm:MODEL` is kind `litellm`),
and the one dispatcher from a spelling to an agent.

A kind is a factory `(arg, request) -> Agent` registered with `@agent_kind(name, usage)`
in a module of this package named `*_agent.py`, or by an installed package through the
`hpcbench.agents` entry-point group (its factory may carry a `usage` attribute)."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hpcbench.errors import HpcbenchError
from hpcbench.registry import Registry

if TYPE_CHECKING:
    from hpcbench.agents.base import Agent
    from hpcbench.problem import ProblemBundle


@dataclass
class AgentOptions:
    base_url: str | None = None
    api_key: str | None = None
    max_tokens: int = 32000
    timeout_s: float = 900.0
    site: str = "local"
    language: str = "c"  # what generating agents write: "c" or "python" (problem.json languages)


@dataclass
class AgentRequest:
    """What a kind's factory may use besides its argument."""

    spec: str  # the whole spelling, for messages
    bundles: dict[str, ProblemBundle]
    known: set[str]  # the problem ids a submission tree may answer
    opts: AgentOptions
    sandbox_factory: Callable[[], Any] | None = None  # tests: the sandbox a repair agent runs drafts in

    def make(self, spec: str) -> Agent:
        """An inner agent (a wrapper kind such as repair:INNER:N)."""
        return _make(spec, self.bundles, self.known, self.opts, self.sandbox_factory)


AgentFactory = Callable[[str, AgentRequest], "Agent"]


def _import_tree() -> None:
    # by folder, not `import hpcbench.agents`: the agents' own modules import this one
    for mod in pkgutil.iter_modules([str(Path(__file__).parent)], prefix="hpcbench.agents."):
        if mod.name.endswith("_agent"):
            importlib.import_module(mod.name)


AGENT_KINDS: Registry[AgentFactory] = Registry("agent kind", "hpcbench.agents", _import_tree)


def agent_kind(name: str, usage: str) -> Callable[[AgentFactory], AgentFactory]:
    """Decorator: the factory of agents spelled `usage` (e.g. "dir:PATH"; "reference" takes no argument)."""

    def deco(factory: AgentFactory) -> AgentFactory:
        factory.usage = usage  # type: ignore[attr-defined]
        AGENT_KINDS.add(name, factory)
        return factory

    return deco


def usages() -> list[str]:
    return [getattr(f, "usage", f"{name}:ARG") for name, f in sorted(AGENT_KINDS.all().items())]


def make_agent(spec: str, bundles: dict[str, ProblemBundle], known: set[str], opts: AgentOptions,
               sandbox_factory: Callable[[], Any] | None = None) -> Agent:
    """An agent from its --agent spelling; HpcbenchError says what is accepted."""
    try:
        return _make(spec, bundles, known, opts, sandbox_factory)
    except ValueError as e:
        raise HpcbenchError(f"--agent {spec!r}: {e}") from None


def _make(spec: str, bundles: dict[str, ProblemBundle], known: set[str], opts: AgentOptions,
          sandbox_factory: Callable[[], Any] | None) -> Agent:
    kind, _, arg = spec.partition(":")
    factory = AGENT_KINDS.get(kind)
    if factory is None:
        raise HpcbenchError(f"--agent {spec!r}: known agents are {', '.join(usages())}")
    return factory(arg, AgentRequest(spec, bundles, known, opts, sandbox_factory))
