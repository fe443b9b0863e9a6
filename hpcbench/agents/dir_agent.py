"""Replay agents: `reference`, `reference-python` and `dir:PATH` copy finished submissions byte
for byte.

This is how a second judge, a new PETSc or another site sees identical programs:
the tree is validated as untrusted input (hpcbench.submission.load_tree), and
only what validates is copied, exactly the declared files plus submission.json."""

from __future__ import annotations

from pathlib import Path

from hpcbench.agents.base import Agent
from hpcbench.agents.kinds import AgentRequest, agent_kind
from hpcbench.problem import ProblemBundle
from hpcbench.resources import data_path
from hpcbench.submission import (
    PYTHON_REFERENCE_AGENT,
    LoadedSubmission,
    Rejected,
    load_tree,
    python_reference_submission,
    reference_submission,
)


def samples_root() -> Path:
    """The bundled sample agents' tree (examples/submissions)."""
    return data_path("examples") / "submissions"


def reserved_agent_names() -> frozenset[str]:
    """Agent names a user's submission tree may not use: `reference` (a submission named so
    would stand in for the bundled references that every check compares against),
    `reference-python` (the bundled Python references), `par` (the problems' performance pars,
    validate-performance's agent for them), the agent keywords, and every bundled sample agent."""
    samples = samples_root()
    bundled = {p.name for p in samples.iterdir() if p.is_dir()} if samples.is_dir() else set()
    return frozenset({"reference", PYTHON_REFERENCE_AGENT, "par", "samples", *bundled})


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


class PythonReferenceAgent(Agent):
    """The hand-written petsc4py references (problems/<id>/reference-python) of the problems that
    have one. They are scored as any submission is, against the C reference's runs: the agent
    name is not `reference`, so nothing compares against them and they never stand in for it."""

    kind = PYTHON_REFERENCE_AGENT
    replay = True

    def __init__(self, bundles: dict[str, ProblemBundle]):
        self.name, self.bundles = PYTHON_REFERENCE_AGENT, bundles

    def _loaded(self, problem_ids: list[str]) -> tuple[list[LoadedSubmission], list[Rejected]]:
        ok: list[LoadedSubmission] = []
        bad: list[Rejected] = []
        for pid in problem_ids:
            folder = self.bundles[pid].folder
            if not (folder / PYTHON_REFERENCE_AGENT).is_dir():
                continue  # a problem without a Python reference: nothing to replay, nothing wrong
            res = python_reference_submission(folder, pid, self.bundles[pid].problem)
            if isinstance(res, LoadedSubmission):
                ok.append(res)
            else:
                bad.append(res)
        return ok, bad

    def load(self) -> tuple[list[LoadedSubmission], list[Rejected]]:
        """Every problem's Python reference that validates, and the rejections with their reasons."""
        return self._loaded(sorted(self.bundles))

    def replay_sources(self, problem_ids: list[str]) -> tuple[list[tuple[Path, Path]], list[str]]:
        ok, bad = self._loaded([p for p in problem_ids if p in self.bundles])
        return ([(s.folder, Path(PYTHON_REFERENCE_AGENT) / s.meta.problem / s.meta.attempt) for s in ok],
                [str(r) for r in bad])


class DirAgent(Agent):
    """Every `<agent>/<problem>/<attempt>/` of a cached tree, names kept."""

    kind = "dir"
    replay = True

    def __init__(self, root: Path, known_problems: set[str], bundles: dict[str, ProblemBundle] | None = None):
        self.root, self.known = Path(root), known_problems
        # args and ranks are checked against what each problem allows (hpcbench/agent_options.py)
        self.problems = {pid: b.problem for pid, b in (bundles or {}).items()}
        self.name = f"dir:{self.root}"
        # A user's tree may not pose as the reference or a sample agent; the bundled samples are those agents.
        bundled = self.root.resolve() == samples_root().resolve()
        self.reserved = frozenset() if bundled else reserved_agent_names()

    def load(self) -> tuple[list[LoadedSubmission], list[Rejected]]:
        """Every submission of the tree that validates, and the rejections with their reasons."""
        return load_tree(self.root, self.known, self.reserved, self.problems)

    def replay_sources(self, problem_ids: list[str]) -> tuple[list[tuple[Path, Path]], list[str]]:
        ok, rejected = self.load()
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


@agent_kind(PYTHON_REFERENCE_AGENT, PYTHON_REFERENCE_AGENT)
def _reference_python(arg: str, req: AgentRequest) -> Agent:
    _no_argument(arg, req)
    return PythonReferenceAgent(req.bundles)


@agent_kind("samples", "samples")
def _samples(arg: str, req: AgentRequest) -> Agent:
    _no_argument(arg, req)
    return DirAgent(samples_root(), req.known, req.bundles)


@agent_kind("dir", "dir:PATH")
def _dir(arg: str, req: AgentRequest) -> Agent:
    return DirAgent(Path(arg), req.known, req.bundles)
