"""Generated mutants of a problem's reference: every mutation the operators make
(hpcbench.validation.mutation.operators), a deterministic sample of them drawn for a run, and the
submission trees that run them through the pipeline.

The sample takes one mutation of each operator in turn (each operator's list shuffled by
a seeded generator), so a small sample still holds every kind of edit and a rare operator
(swapped arguments) is not drowned by a frequent one (arithmetic replacement). The seed
is the problem id plus `seed`: the same command draws the same mutants, whose names are
stable, so a rerun reuses their finished jobs."""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from hpcbench.problem import ProblemBundle
from hpcbench.validation.mutation.names import installed_families, member_index
from hpcbench.validation.mutation.operators import OPERATORS, Mutation, TaskFacts, mutations, stated_tolerances

AGENT = "generated"  # the agent name of generated mutants in their campaigns


@dataclass
class GeneratedSet:
    problem: str
    every: list[Mutation]  # what the operators made, in source order
    drawn: list[Mutation] = field(default_factory=list)  # the sample that runs

    @property
    def by_operator(self) -> dict[str, int]:
        c = Counter(m.operator for m in self.every)
        return {op: c[op] for op in OPERATORS if c[op]}


def reference_files(bundle: ProblemBundle) -> tuple[dict, dict[str, str]]:
    """The reference's submission.json and its files."""
    meta = json.loads((bundle.reference_dir / "submission.json").read_text())
    return meta, {name: (bundle.reference_dir / name).read_text() for name in meta["files"]}


def task_facts(bundle: ProblemBundle) -> TaskFacts:
    """What the task states that the tol and branch operators use: its accuracies, its ranges."""
    h = bundle.problem.held_out
    published = []
    for c in bundle.problem.cases:
        for o, v in zip(c.args[::2], c.args[1::2], strict=False):
            try:
                published.append((o, float(v)))
            except ValueError:
                continue
    return TaskFacts(stated_tolerances(bundle.problem.task), tuple(h.params) if h else (), tuple(published))


def all_mutations(bundle: ProblemBundle, names: dict | None = None) -> list[Mutation]:
    """Every mutation of the reference's C sources."""
    names = member_index(installed_families()) if names is None else names
    _, files = reference_files(bundle)
    facts = task_facts(bundle)
    return [m for f, text in sorted(files.items()) if f.endswith(".c")
            for m in mutations(f, text, names, facts=facts)]


def draw_mutations(every: list[Mutation], count: int | None, key: str) -> list[Mutation]:
    """`count` mutations (None: all), one operator after another, in source order."""
    if count is None or count >= len(every):
        return list(every)
    rng = random.Random(key)
    pools = {op: [m for m in every if m.operator == op] for op in OPERATORS}
    for pool in pools.values():
        rng.shuffle(pool)
    taken: list[Mutation] = []
    while len(taken) < count:
        for op in OPERATORS:
            if pools[op] and len(taken) < count:
                taken.append(pools[op].pop())
    order = {id(m): i for i, m in enumerate(every)}
    return sorted(taken, key=lambda m: order[id(m)])


def generate(bundle: ProblemBundle, count: int | None, seed: int = 0, names: dict | None = None) -> GeneratedSet:
    every = all_mutations(bundle, names)
    return GeneratedSet(bundle.id, every, draw_mutations(every, count, f"{seed}:{bundle.id}"))


def write_trees(bundle: ProblemBundle, drawn: list[Mutation], root: Path) -> list[Path]:
    """`root/<problem>/<mutant name>/`: the reference with one mutation applied, and a
    submission.json of agent `generated`; files already there with the same text are left
    alone (their job records stay valid)."""
    meta, files = reference_files(bundle)
    out = []
    for m in drawn:
        folder = root / bundle.id / m.name
        folder.mkdir(parents=True, exist_ok=True)
        mine = {**files, m.file: m.apply(files[m.file])}
        for name, text in mine.items():
            if not (folder / name).is_file() or (folder / name).read_text() != text:
                (folder / name).write_text(text)
        (folder / "submission.json").write_text(json.dumps({**meta, "agent": AGENT, "attempt": m.name, "args": []},
                                                           indent=1))
        out.append(folder)
    return out
