"""Replay agents: `reference` and `dir:PATH` copy finished submissions byte for byte.

This is how a second judge, a new PETSc or another site sees identical programs:
the tree is validated as untrusted input (hpcbench.submission.load_tree), and
only what validates is copied, exactly the declared files plus submission.json."""

from __future__ import annotations

from pathlib import Path

from hpcbench.agents.base import Agent
from hpcbench.agents.kinds import AgentRequest, agent_kind
from hpcbench.problem import ProblemBundle
from hpcbench.submission import LoadedSubmission, load_tree, reference_submission


class ReferenceAgent(Agent):
    """The hand-written reference of every problem (a refusal for the refusal set)."""

    kind = "reference"
    replay = True

    def __init__(self, bundles: dict[str, ProblemBundle]):
        self.name, self.bundles = "reference", bundles

    def replay_sources(self, problem_ids: list[str]) -> tuple[list[tuple[Path, Path]], list[str]]:
        pairs, bad = [], []
        for pid in problem_ids:
            res = reference_submission(self.bundles[pid].folder, pid)
            if isinstance(res, LoadedSubmission):
                pairs.append((res.folder, Path("reference") / pid / res.meta.attempt))
            else:
                bad.append(str(res))
        return pairs, bad


class DirAgent(Agent):
    """Every `<agent>/<problem>/<attempt>/` of a cached tree, names kept."""

    kind = "dir"
    replay = True

    def __init__(self, root: Path, known_problems: set[str]):
        self.root, self.known = Path(root), known_problems
        self.name = f"dir:{self.root}"

    def replay_sources(self, problem_ids: list[str]) -> tuple[list[tuple[Path, Path]], list[str]]:
        from hpcbench.agents import reserved_agent_names

        ok, rejected = load_tree(self.root, self.known, reserved_agent_names())
        wanted = set(problem_ids)
        pairs = [(s.folder, Path(s.meta.agent) / s.meta.problem / s.meta.attempt)
                 for s in ok if s.meta.problem in wanted]
        return pairs, [str(r) for r in rejected]


def _no_argument(arg: str, req: AgentRequest) -> None:
    if arg:
        raise ValueError(f"{req.spec.partition(':')[0]} takes no argument")


@agent_kind("reference", "reference")
def _reference(arg: str, req: AgentRequest) -> Agent:
    _no_argument(arg, req)
    return ReferenceAgent(req.bundles)


@agent_kind("samples", "samples")
def _samples(arg: str, req: AgentRequest) -> Agent:
    from hpcbench.resources import data_path

    _no_argument(arg, req)
    return DirAgent(data_path("examples") / "submissions", req.known)


@agent_kind("dir", "dir:PATH")
def _dir(arg: str, req: AgentRequest) -> Agent:
    return DirAgent(Path(arg), req.known)
