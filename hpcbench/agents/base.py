"""The interface every agent under test implements.

Two kinds: a *replay* agent (reference, dir:PATH) copies finished submission
trees byte for byte; a *generating* agent (litellm, a2a, repair) holds a
conversation per attempt that sees only the problem's public model (`Problem`,
i.e. problem.json) and answers with a `Reply`. Generating agents never receive a
ProblemBundle, so the hidden checks and the reference cannot reach them."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from pathlib import Path
from typing import ClassVar

from hpcbench.agents.contract import GenerationFailure, Reply
from hpcbench.problem import Problem

_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")


def agent_name(text: str) -> str:
    """A folder-safe agent name (submission.NAME_RE) derived from a model or card name."""
    name = _UNSAFE.sub("_", text).strip("_.+-") or "agent"
    return name[:120]


class Conversation(ABC):
    """One attempt at one problem: a first answer, then optional follow-ups."""

    @abstractmethod
    async def first(self) -> Reply: ...

    async def follow_up(self, text: str) -> Reply:
        raise NotImplementedError(f"{type(self).__name__} cannot take feedback")

    async def close(self) -> None:
        return None


class Agent(ABC):
    kind: ClassVar[str]
    replay: ClassVar[bool] = False
    supports_feedback: ClassVar[bool] = False
    name: str = ""
    model: str = ""

    async def start(self) -> None:  # noqa: B027 (optional hook: most agents need nothing)
        """Resolve what the agent needs before the first attempt (an agent card ...)."""

    async def close(self) -> None:
        return None

    async def preflight(self) -> GenerationFailure | None:
        """Whether the agent can be asked at all (key, endpoint, model), checked before a
        campaign is planned; None when it can (or when there is nothing to check)."""
        return None

    def conversation(self, problem: Problem) -> Conversation:
        raise NotImplementedError(f"{self.kind} agents replay submissions; they hold no conversation")

    def replay_sources(self, problem_ids: list[str]) -> tuple[list[tuple[Path, Path]], list[str]]:
        """Replay agents: (source folder, destination relative path) pairs and rejections."""
        raise NotImplementedError


class GeneratingAgent(Agent):
    @abstractmethod
    def conversation(self, problem: Problem) -> Conversation: ...
