"""The hidden program libraries validation runs, and their submission trees.

Every problem may bring, hidden like checks.json:
- `mutants/mutants.json` (validate-checks): wrong programs (small edits of the reference's C
  source, each with a one-line reason) and valid variants (other solvers, tolerances, options
  the task allows), and generated mutants judged harmless;
- `mutants/perf.json` (validate-performance): right programs that do needless work in ways
  agents do (`slower`), right programs that are as fast (`as_fast`), and right programs
  faster than the reference (`faster`: other methods within the task, near the problem's par);
- `mutants/mutants-python.json` (validate-checks --language python): mutants.json's format, its
  programs edits of the petsc4py reference (`reference-python/`), run as Python submissions
  against the same C reference and checks (issue 38). Only a problem whose `languages` lists
  python and that has a Python reference may bring one.

A program is the reference with `edits` applied (each `find` must occur exactly once in `file`,
by default the reference's entry, so an edit reads as what it changes and survives unrelated
edits of the reference) and `args`
before each case's own; it is written as a submission tree `<root>/<agent>/<problem>/<name>/`
(agent: wrong, valid, slower, as-fast, faster) and loaded like any agent's."""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path
from typing import Annotated, Literal

from pydantic import ConfigDict, Field, model_validator

from hpcbench.errors import ConfigError
from hpcbench.problem import ProblemBundle, load_json_model
from hpcbench.strict import FrozenStrict

Name = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")]
Measure = Literal["checks", "performance"]
Language = Literal["c", "python"]
FILES: dict[Measure, str] = {"checks": "mutants/mutants.json", "performance": "mutants/perf.json"}
# the libraries of Python programs (edits of reference-python/): checks only
PYTHON_FILES: dict[Measure, str] = {"checks": "mutants/mutants-python.json"}
# each library's two kinds: the programs the measure must punish, then those it must not
KINDS: dict[Measure, tuple[str, str]] = {"checks": ("wrong", "valid"), "performance": ("slower", "as_fast")}
# every kind a library may hold: performance's second side, faster programs, each of which must
# score above every program 1.5x or more slower than it (validation/report.py)
ALL_KINDS: dict[Measure, tuple[str, ...]] = {**KINDS, "performance": ("slower", "as_fast", "faster")}


class Edit(FrozenStrict):
    """Replace the one occurrence of `find` in `file` (None: the reference's entry) by `replace`."""

    file: str | None = None
    find: Annotated[str, Field(min_length=1)]
    replace: str


# What kind of mistake (a wrong program) or of right answer (a valid variant) an entry is
# (issue 35's classes; docs/problems.md "Library entries: class and wrong_where"):
# - edge-only: wrong only in part of a held-out range (`wrong_where` says where);
# - stated-tolerance: a solve stopped at a looser tolerance than the task states;
# - requirement-broken: right numbers, a stated requirement broken (an iteration bound);
# - one-output-far-off: one required quantity wrong by orders of magnitude, the rest right;
# - solver-residual (valid): a valid method whose answers differ from the reference's by what
#   the solver's residual allows, the yardstick the tolerances are set from.
WRONG_CLASSES = ("edge-only", "stated-tolerance", "requirement-broken", "one-output-far-off")
VALID_CLASSES = ("solver-residual",)
EntryClass = Literal["edge-only", "stated-tolerance", "requirement-broken", "one-output-far-off", "solver-residual"]


class Program(FrozenStrict):
    model_config = ConfigDict(populate_by_name=True)

    name: Name
    reason: Annotated[str, Field(min_length=10)]
    edits: list[Edit] = []
    args: list[str] = []  # options added before each case's own (submission.json `args`)
    # `class` in the file (a Python keyword here)
    entry_class: EntryClass | None = Field(default=None, alias="class")
    # edge-only: the part of the held-out ranges where the program is wrong, per drawn option
    # [lo, hi] (closed); a held-out case with every named option inside is one where it fails
    wrong_where: dict[str, tuple[float, float]] = {}

    @model_validator(mode="after")
    def _where(self) -> Program:
        if (self.entry_class == "edge-only") != bool(self.wrong_where):
            raise ValueError("wrong_where: an edge-only entry says where it is wrong, and only an edge-only one")
        for opt, (lo, hi) in self.wrong_where.items():
            if lo > hi:
                raise ValueError(f"wrong_where: {opt}: {lo:g} is above {hi:g}")
        return self

    def wrong_at(self, args: list[str]) -> bool:
        """Whether a case of `args` lies in wrong_where (every named option inside its interval)."""
        values = dict(zip(args[::2], args[1::2], strict=False))
        try:
            return all(o in values and lo <= float(values[o]) <= hi for o, (lo, hi) in self.wrong_where.items())
        except ValueError:
            return False


class Harmless(FrozenStrict):
    """A generated mutant a person judged harmless: it passes every check though its numbers
    differ, and is a correct program (a solver tolerance twice as tight, a Jacobian entry the
    converged answer does not depend on). Matched by its edit on the reference's line, so it
    survives unrelated edits elsewhere; reported with its reason, not counted in the kill rate."""

    operator: str
    line: Annotated[str, Field(min_length=1)]  # the reference's source line, stripped
    original: str
    replacement: str
    reason: Annotated[str, Field(min_length=10)]


class MutantLibrary(FrozenStrict):
    wrong: Annotated[list[Program], Field(min_length=1)]
    valid: Annotated[list[Program], Field(min_length=1)]
    harmless: list[Harmless] = []


class PerfLibrary(FrozenStrict):
    slower: Annotated[list[Program], Field(min_length=1)]
    as_fast: Annotated[list[Program], Field(min_length=1)]
    faster: list[Program] = []


Library = MutantLibrary | PerfLibrary


def agent_of(kind: str) -> str:
    """The agent folder of a kind's programs (as_fast -> as-fast: agent names take no underscore)."""
    return kind.replace("_", "-")


def kind_of(agent: str) -> str:
    return agent.replace("-", "_")


def library_file(measure: Measure, language: Language = "c") -> str:
    """Where in a problem's folder the library of `language`'s programs for `measure` lies."""
    if language == "python":
        if measure not in PYTHON_FILES:
            raise ConfigError("--language", None, f"no Python library is measured by validate-{measure}")
        return PYTHON_FILES[measure]
    return FILES[measure]


def library_path(bundle: ProblemBundle, measure: Measure, language: Language = "c") -> Path:
    return bundle.folder / library_file(measure, language)


def reference_folder(bundle: ProblemBundle, language: Language = "c") -> Path:
    """The reference a language's library edits: reference/ (C) or reference-python/."""
    from hpcbench.submission import PYTHON_REFERENCE_AGENT

    return bundle.reference_dir if language == "c" else bundle.folder / PYTHON_REFERENCE_AGENT


def load_library(bundle: ProblemBundle, measure: Measure, language: Language = "c") -> Library | None:
    """The problem's library of `language`'s programs for `measure`; None where it has none.
    Names are unique across kinds."""
    path = library_path(bundle, measure, language)
    if not path.is_file():
        return None
    if language == "python":
        if "python" not in bundle.problem.languages:
            raise ConfigError(path, None, f"problem.json `languages` ({', '.join(bundle.problem.languages)}) does not "
                                          "list python: no Python program is a submission to this problem")
        if not (reference_folder(bundle, language) / "submission.json").is_file():
            raise ConfigError(path, None, "the problem has no Python reference (reference-python/submission.json) "
                                          "for its programs to edit")
    lib = load_json_model(path, MutantLibrary if measure == "checks" else PerfLibrary)
    assert isinstance(lib, MutantLibrary | PerfLibrary)
    seen: set[str] = set()
    for kind in ALL_KINDS[measure]:
        for i, prog in enumerate(getattr(lib, kind)):
            if prog.name in seen:
                raise ConfigError(path, f"{kind}[{i}].name", f"{prog.name!r} is used twice")
            seen.add(prog.name)
            why = _class_misuse(bundle, kind, prog)
            if why:
                raise ConfigError(path, f"{kind}[{i}].{why[0]}", why[1])
    if measure == "performance" and bundle.problem.performance is None:
        raise ConfigError(path, None, "the problem declares no performance case (problem.json `performance`)")
    return lib


def _class_misuse(bundle: ProblemBundle, kind: str, prog: Program) -> tuple[str, str] | None:
    """(field, reason) where an entry's class does not fit its kind or its wrong_where the
    problem's held-out ranges."""
    if prog.entry_class is not None:
        allowed = WRONG_CLASSES if kind == "wrong" else VALID_CLASSES if kind == "valid" else ()
        if prog.entry_class not in allowed:
            return "class", f"{prog.entry_class!r} is not a class of a {kind} entry (those: {', '.join(allowed)})"
    h = bundle.problem.held_out
    ranges = {p.option: p for p in h.params} if h else {}
    for opt, (lo, hi) in prog.wrong_where.items():
        p = ranges.get(opt)
        if p is None:
            return "wrong_where", f"{opt} is not a held-out param of problem.json (those: {', '.join(ranges)})"
        top = p.max
        bottom = -p.max if p.either_sign else p.min
        if hi < bottom or lo > top:
            return "wrong_where", f"{opt}: [{lo:g}, {hi:g}] lies outside the held-out range [{p.min:g}, {p.max:g}]"
    return None


def edge_only(lib: Library) -> list[Program]:
    """The library's edge-only wrong programs (tests/test_edge_only.py draws against them)."""
    return [p for p in getattr(lib, "wrong", []) if p.entry_class == "edge-only"]


def apply_edits(bundle: ProblemBundle, measure: Measure, prog: Program, where: str,
                language: Language = "c") -> dict[str, str]:
    """The reference's files (`language`'s reference) with the program's edits applied (`where`:
    e.g. wrong[3], for errors)."""
    ref = reference_folder(bundle, language)
    meta = json.loads((ref / "submission.json").read_text())
    files = {name: (ref / name).read_text() for name in meta["files"]}
    path = library_path(bundle, measure, language)
    for j, e in enumerate(prog.edits):
        at = f"{where}.edits[{j}]"
        name = e.file or meta["entry"]
        if name not in files:
            raise ConfigError(path, f"{at}.file", f"{name!r} is not a file of {ref.name}/ (those: {', '.join(files)})")
        n = files[name].count(e.find)
        if n != 1:
            raise ConfigError(path, f"{at}.find",
                              f"occurs {n} times in {ref.name}/{name} (must be exactly once): {e.find[:60]!r}")
        files[name] = files[name].replace(e.find, e.replace)
    return files


def write_tree(folder: Path, files: dict[str, str], meta: dict) -> None:
    """One submission folder; unchanged files are not rewritten (their job records stay valid, and
    validate-checks' workers, which write the same trees again, never truncate a file another
    worker is reading)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in {**files, "submission.json": json.dumps(meta, indent=1)}.items():
        if not (folder / name).is_file() or (folder / name).read_text() != text:
            (folder / name).write_text(text)


def write_programs(bundles: dict[str, ProblemBundle], measure: Measure, root: Path,
                   only: Collection[str] | None = None, language: Language = "c") -> dict[str, Library]:
    """Submission trees `root/<agent>/<problem>/<name>/` for every library of `measure` in
    `language` (all checked before any is written); `only`: these programs' names."""
    libs = {pid: lib for pid, b in bundles.items() if (lib := load_library(b, measure, language)) is not None}
    trees: list[tuple[Path, dict[str, str], dict]] = []
    for pid, lib in libs.items():
        ref_meta = json.loads((reference_folder(bundles[pid], language) / "submission.json").read_text())
        for kind in ALL_KINDS[measure]:
            for i, prog in enumerate(getattr(lib, kind)):
                if only and prog.name not in only:
                    continue
                files = apply_edits(bundles[pid], measure, prog, f"{kind}[{i}]", language)
                meta = {**ref_meta, "agent": agent_of(kind), "attempt": prog.name, "args": prog.args}
                trees.append((root / agent_of(kind) / pid / prog.name, files, meta))
    for folder, files, meta in trees:
        write_tree(folder, files, meta)
    return libs


def reasons(libs: dict[str, Library], measure: Measure) -> dict[tuple[str, str, str], str]:
    """(kind, problem, name) -> the program's reason, for every program of the libraries."""
    return {(kind, pid, p.name): p.reason for pid, lib in libs.items() for kind in ALL_KINDS[measure]
            for p in getattr(lib, kind)}
