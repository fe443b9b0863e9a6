"""The execution evidence a judge sees beside the code, split by who wrote it (built by
evaluators/judged/evidence.py from the evaluator's context; rendered by judge/prompt.py).

`Evidence.measured` holds only what hpcbench produced; anything the agent's program or
source can shape goes to `Evidence.agent` as labelled text, which the prompt fences off
as data."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Evidence:
    measured: list[str] = field(default_factory=list)  # hpcbench's own lines
    agent: list[tuple[str, str]] = field(default_factory=list)  # (what it is, text the agent controls)
