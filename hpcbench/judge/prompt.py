"""Rubric prompts: versioned text files in evaluators/prompts/<name>.v<N>.txt.

A file holds a system and a user part, each introduced by a line
`=== system ===` / `=== user ===`, with $problem, $code, $evidence,
$agent_evidence, $boundary and $answer_format substituted (string.Template, so C
braces and JSON need no escaping). A changed rubric is a new file and version,
never an edit of an old one: the version goes into every result and into the
cache key.

Everything the agent controls reaches the prompt as fenced data: each source file,
its submission.json (the options and rank counts it asked for) and each piece of
agent-shaped evidence (evaluators/judged/evidence.py) sits between
`<<<AGENT DATA <boundary> BEGIN: what it is>>>` and `<<<AGENT DATA <boundary> END>>>`,
whose boundary the agent cannot guess (judge/boundary.py) and which the rubric
tells the judge never to take instructions from. The labels are hpcbench's;
control and bidirectional-override characters inside the data are shown as escapes
(hpcbench.safetext.visible), so the judge reads the code as the compiler does.
Sources are sent whole, never cut: a cut would let padding hide code from the judge
(a submission too large to send is scored 0 instead, evaluators/judged/base.py)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from string import Template

from hpcbench.judge.answer import FORMAT
from hpcbench.judge.boundary import boundary
from hpcbench.judge.evidence import Evidence
from hpcbench.problem import Problem
from hpcbench.safetext import visible
from hpcbench.submission import Submission

_PART = re.compile(r"^=== (system|user) ===\s*$", re.M)
# What of submission.json a judge sees: the choices the agent made for its runs.
META_FIELDS = ("entry", "files", "ranks", "args")


@cache
def load_rubric(prompts: Path, version: str) -> tuple[Template, Template]:
    """The rubric <prompts>/<version>.txt (the evaluators' folder of prompts, evaluators/prompts)."""
    path = prompts / f"{version}.txt"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no prompt file for version {version!r}")
    text = path.read_text()
    pieces = _PART.split(text)
    parts = dict(zip(pieces[1::2], pieces[2::2], strict=True))
    if set(parts) != {"system", "user"}:
        raise ValueError(f"{path}: needs one '=== system ===' and one '=== user ===' part, found {sorted(parts)}")
    return Template(parts["system"].strip()), Template(parts["user"].strip())


def problem_text(p: Problem, language: str = "c") -> str:
    """The task as the judged program's author was given it; a Python program's says so (a C
    program's text is unchanged, so its prompts and cached verdicts stay the same)."""
    said = "; written in Python with petsc4py" if language == "python" else ""
    lines = [f"{p.title} (id {p.id}; modules {', '.join(p.modules)}; difficulty {p.difficulty}{said})", "",
             p.task_for(language).strip()]
    if p.output:
        lines += ["", "Output contract (rank 0 prints `name: values`):"]
        lines += [f"- {o.name}: {o.description}" for o in p.output]
    lines += ["", "Test cases run:"]
    lines += [f"- {c.name}: args {' '.join(c.args) or '(none)'}, ranks {c.ranks}" for c in p.cases]
    return "\n".join(lines)


@dataclass(frozen=True)
class AgentData:
    """The pieces of a prompt the agent controls, each with hpcbench's label."""

    code: list[tuple[str, str]]
    evidence: list[tuple[str, str]]

    @property
    def texts(self) -> list[str]:
        return [t for _, t in self.code + self.evidence]

    @property
    def source_chars(self) -> int:
        """The size the agent chose: its files and submission.json (evidence is clipped by hpcbench)."""
        return sum(len(t) for _, t in self.code)


def agent_data(sources: dict[str, str], meta: Submission | None, evidence: Evidence) -> AgentData:
    files = sorted((n, s) for n, s in sources.items() if n != "submission.json")
    code = [(f"source file {i} of {len(files)}", f"file {name} ({src.count(chr(10)) + 1} lines):\n{visible(src)}")
            for i, (name, src) in enumerate(files, start=1)]
    if meta is not None:
        chosen = {k: getattr(meta, k) for k in META_FIELDS}
        code.append(("submission.json: the entry file, the files, and the rank counts and command-line options "
                     "the agent asked for", visible(json.dumps(chosen, indent=1))))
    return AgentData(code=code, evidence=[(label, visible(text)) for label, text in evidence.agent])


def fence(b: str, pieces: list[tuple[str, str]], empty: str) -> str:
    if not pieces:
        return empty
    return "\n\n".join(f"<<<AGENT DATA {b} BEGIN: {label}>>>\n{text.rstrip()}\n<<<AGENT DATA {b} END>>>"
                       for label, text in pieces)


def render_messages(prompts: Path, version: str, problem: Problem, data: AgentData, evidence: Evidence,
           key: bytes, language: str = "c") -> list[dict[str, str]]:
    system, user = load_rubric(prompts, version)
    b = boundary(key, version, data.texts)
    values = {"problem": problem_text(problem, language), "code": fence(b, data.code, "(no source files)"),
              "evidence": "\n".join(evidence.measured) or "(none)",
              "agent_evidence": fence(b, data.evidence, "(none)"), "boundary": b, "answer_format": FORMAT}
    return [{"role": "system", "content": system.substitute(values)},
            {"role": "user", "content": user.substitute(values)}]
