"""Rubric prompts: versioned text files in evaluators/prompts/<name>.v<N>.txt.

A file holds a system and a user part, each introduced by a line
`=== system ===` / `=== user ===`, with $problem, $code, $evidence and
$answer_format substituted (string.Template, so C braces and JSON need no
escaping). A changed rubric is a new file and version, never an edit of an old
one: the version goes into every result and into the cache key."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from string import Template

from hpcbench.judge.answer import FORMAT
from hpcbench.problem import Problem

_PART = re.compile(r"^=== (system|user) ===\s*$", re.M)
MAX_FILE_CHARS = 40_000


def prompts_dir() -> Path:
    import hpcbench.evaluators as pkg

    return Path(pkg.__file__).resolve().parent / "prompts"


@cache
def load(version: str) -> tuple[Template, Template]:
    path = prompts_dir() / f"{version}.txt"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no prompt file for version {version!r}")
    text = path.read_text()
    pieces = _PART.split(text)
    parts = dict(zip(pieces[1::2], pieces[2::2], strict=True))
    if set(parts) != {"system", "user"}:
        raise ValueError(f"{path}: needs one '=== system ===' and one '=== user ===' part, found {sorted(parts)}")
    return Template(parts["system"].strip()), Template(parts["user"].strip())


def problem_text(p: Problem) -> str:
    lines = [f"{p.title} (id {p.id}; modules {', '.join(p.modules)}; difficulty {p.difficulty})", "", p.task.strip()]
    if p.output:
        lines += ["", "Output contract (rank 0 prints `name: values`):"]
        lines += [f"- {o.name}: {o.description}" for o in p.output]
    lines += ["", "Test cases run:"]
    lines += [f"- {c.name}: args {' '.join(c.args) or '(none)'}, ranks {c.ranks}" for c in p.cases]
    return "\n".join(lines)


def code_text(sources: dict[str, str]) -> str:
    out = []
    for name, src in sorted(sources.items()):
        if name == "submission.json":
            continue
        body = src if len(src) <= MAX_FILE_CHARS else (
            src[:MAX_FILE_CHARS] + f"\n/* ... {len(src) - MAX_FILE_CHARS} more characters not shown */")
        out.append(f"----- file {name} ({src.count(chr(10)) + 1} lines) -----\n{body}")
    return "\n\n".join(out) or "(no source files)"


def render(version: str, problem: Problem, sources: dict[str, str], evidence: str) -> list[dict[str, str]]:
    system, user = load(version)
    values = {"problem": problem_text(problem), "code": code_text(sources), "evidence": evidence,
              "answer_format": FORMAT}
    return [{"role": "system", "content": system.substitute(values)},
            {"role": "user", "content": user.substitute(values)}]
