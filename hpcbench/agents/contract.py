"""What an agent under test is told, and what it must answer.

The prompt is built from the problem's public view (problem.json as validated)
and a fixed output contract; nothing hidden (reference, checks, other agents'
work) is ever an input here. Answers are untrusted: `validate_answer` turns
whatever came back into either a checked `Answer` or a `GenerationFailure` with
a reason and a taxonomy key, never an exception. docs/agents.md documents both
directions."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from hpcbench.problem import Problem
from hpcbench.submission import INFRA_KINDS, MAX_FILE_BYTES, MAX_FILES, Generation, check_file_name

PROMPT_VERSION = "gen-v1"

# Failure taxonomy of generation: the key stored in submission.json's generation_error_kind.
FAILURE_KINDS: dict[str, str] = {
    "no_code": "the answer holds no source files",
    "malformed_answer": "the answer is not the JSON object the contract asks for",
    "unsafe_file_name": "a file name escapes the submission folder or has odd characters",
    "duplicate_file": "two files with the same name",
    "binary_file": "a file is binary or not UTF-8 text",
    "file_too_large": f"a file is larger than {MAX_FILE_BYTES} bytes",
    "too_many_files": f"more than {MAX_FILES} files",
    "entry_not_in_files": "the entry file is not among the files",
    "truncated": "the model stopped at its completion-token limit",
    "agent_failed": "the agent reported that it could not generate code",
    "protocol_error": "the agent's endpoint answered with an error or something the protocol does not allow",
    "timeout": "no answer within the time limit",
    "disallowed_request": "the answer's args or ranks ask for what the problem does not allow",
    # Infrastructure: the model was never asked, or its answer never arrived. These are errors
    # to retry (`hpcbench retry`), never a submission: an outage must not read as a verdict.
    "credentials": "the endpoint refused the API key, or no key was found",
    "unreachable": "the endpoint could not be reached (connection, DNS, TLS)",
    "rate_limited": "quota or rate limit still exceeded after retries",
    "provider_error": "the provider failed (server error, unknown model, request it could not serve)",
    "request_timeout": "the endpoint did not answer a request in time, after retries",
}

def _answer_contract(intro: str, main: str, suffixes: str, entry: str, printing: str) -> str:
    """The answer contract an agent is given: what it writes (`intro`), then the one JSON object,
    the same for every language but for its file names, entry and printing rule."""
    return f"""\
{intro}

Answer with ONE JSON object and nothing else (no prose outside it; a ```json fence is tolerated):
{{
  "files":   [{{"name": "{main}", "content": "<full source text>"}}, ...],
  "entry":   "{main}",
  "ranks":   [<MPI rank counts you intend, e.g. 1>],
  "args":    ["<extra command-line options for every run, e.g. -ksp_type cg>"],
  "refused": false,
  "refusal_reason": ""
}}
Rules:
- "files": every source file, relative names of letters, digits, '.', '_' or '-'
  (sub-folders with '/'), ending in {suffixes}; at most 64 files.
- "entry": {entry}; it must be one of "files".
- The test cases' own options (listed below) are appended to "args" on every run.
- Print exactly the output lines the task asks for, from rank 0{printing}.
- If the task cannot be done as stated (it needs something this PETSc lacks, or its
  requirements contradict each other), do not invent a program: answer
  {{"refused": true, "refusal_reason": "<what is wrong, and what you would need>"}}.
"""


SYSTEM_PROMPT = _answer_contract(
    "You are writing a PETSc program that will be compiled with PETSc's own makefiles\n"
    "(mpicc via PETSc's CLINKER) and run under mpiexec on a real PETSc installation.",
    "main.c", ".c, .h, .cu, .cxx, .hpp or .cuh", "the file that holds main()", "")
PYTHON_SYSTEM_PROMPT = _answer_contract(
    "You are writing a PETSc program in Python with petsc4py. It will be run under mpiexec with the\n"
    "interpreter of a real PETSc installation's petsc4py; it may import the standard library, its own\n"
    "files, petsc4py, numpy and mpi4py, nothing else. Call petsc4py.init(sys.argv) before\n"
    "`from petsc4py import PETSc`, so that PETSc reads the command line.",
    "main.py", ".py", "the file run as the program", " (PETSc.Sys.Print)")
LANGUAGE_NAMES = {"c": "C", "python": "Python (petsc4py)"}


def system_prompt(language: str = "c") -> str:
    """The answer contract for an agent writing in `language` (the C one unchanged)."""
    return PYTHON_SYSTEM_PROMPT if language == "python" else SYSTEM_PROMPT


def render_user_prompt(problem: Problem, language: str = "c") -> str:
    """The task as the agent sees it: the public description (in the words for `language`),
    then problem.json's public fields verbatim (cases, output contract, requirements). A problem
    that accepts more than one language says which."""
    public = problem.public_view()
    if "task" in public:
        public["task"] = problem.task_for(language)
    lines = [f"# {problem.title}", "", problem.task_for(language), ""]
    if len(problem.languages) > 1:
        lines += ["Languages this problem accepts: " + ", ".join(LANGUAGE_NAMES.get(x, x) for x in problem.languages)
                  + f"; answer in {LANGUAGE_NAMES.get(language, language)}.", ""]
    if problem.output:
        lines += ["Output contract (rank 0 prints one line per quantity, `name: v1 v2 ...`):"]
        lines += [f"- {q.name}: {q.description}" for q in problem.output] + [""]
    lines += ["Test cases (options appended to your args; ranks it is run at):"]
    for c in problem.cases:
        lines.append(f"- {c.name}: args {json.dumps(c.args)}, ranks {c.ranks}, time limit {c.time_limit_s:g} s")
    if problem.held_out:
        opts = ", ".join(f"{p.option} in [{p.min:g}, {p.max:g}]" for p in problem.held_out.params)
        spread = (" (both ends and the middle of each range are drawn in every run)"
                  if problem.held_out.stratified else "")
        lines.append(f"- and {problem.held_out.cases} case(s) whose values are drawn when the benchmark runs{spread}: "
                     f"{opts}; ranks {problem.held_out.ranks}")
    allowed = problem.ranks_allowed()
    lines += ["", "What \"args\" may hold: " + (", ".join(problem.agent_options) or "nothing (leave it empty)")
              + " (a name ending in * stands for every option starting so; no viewers, monitors or logging)",
              "What \"ranks\" may hold: " + ("any rank count" if allowed is None else ", ".join(map(str, allowed)))]
    lines += ["", "Public problem record (problem.json):", json.dumps(public, indent=1, sort_keys=True)]
    return "\n".join(lines) + "\n"


def render_feedback(diagnostics: str, round_no: int, rounds: int) -> str:
    return (f"Round {round_no} of {rounds}: your program was built and run locally against the same PETSc.\n"
            f"{diagnostics}\n\nAnswer again with the complete corrected program in the same JSON format "
            "(every file, not a diff). If it is already right, send it unchanged.\n")


@dataclass
class Answer:
    """A checked answer: safe file names, text sources, an entry among them."""

    files: dict[str, str] = field(default_factory=dict)
    entry: str = ""
    ranks: list[int] = field(default_factory=list)
    args: list[str] = field(default_factory=list)
    refused: bool = False
    refusal_reason: str = ""


@dataclass
class GenerationFailure:
    kind: str
    reason: str

    def __post_init__(self) -> None:
        assert self.kind in FAILURE_KINDS, self.kind

    @property
    def infrastructure(self) -> bool:
        """An error outside the agent under test (no key, outage, quota): retried, never scored."""
        return self.kind in INFRA_KINDS


@dataclass
class Reply:
    """One agent turn: what it answered (checked) and what the turn cost."""

    outcome: Answer | GenerationFailure
    generation: Generation = field(default_factory=Generation)
    raw: str = ""  # the answer as received (capped), kept beside a failed attempt for diagnosis


_FENCE = re.compile(r"^\s*```[a-zA-Z0-9_-]*\s*\n(.*?)\n\s*```\s*$", re.S)


def parse_json_answer(text: str) -> dict[str, Any] | GenerationFailure:
    """The JSON object of an LLM's or agent's text answer (one optional ``` fence)."""
    if not text or not text.strip():
        return GenerationFailure("no_code", "empty answer")
    body = text.strip()
    m = _FENCE.match(body)
    if m:
        body = m.group(1)
    try:
        obj = json.loads(body)
    except json.JSONDecodeError as e:
        # Models often wrap the object in prose: take the outermost braces once.
        lo, hi = body.find("{"), body.rfind("}")
        try:
            obj = json.loads(body[lo:hi + 1]) if 0 <= lo < hi else None
        except json.JSONDecodeError:
            obj = None
        if obj is None:
            return GenerationFailure("malformed_answer",
                                     f"not JSON: {e.msg} at line {e.lineno} column {e.colno}")
    if not isinstance(obj, dict):
        return GenerationFailure("malformed_answer", f"JSON {type(obj).__name__}, not an object")
    return obj


def _as_text(name: str, content: Any) -> str | GenerationFailure:
    if isinstance(content, bytes):
        if len(content) > MAX_FILE_BYTES:
            return GenerationFailure("file_too_large", f"{name!r} is {len(content)} bytes (limit {MAX_FILE_BYTES})")
        if b"\x00" in content:
            return GenerationFailure("binary_file", f"{name!r} is binary (holds NUL bytes)")
        try:
            content = content.decode("utf-8")
        except UnicodeDecodeError:
            return GenerationFailure("binary_file", f"{name!r} is not UTF-8 text")
    if not isinstance(content, str):
        return GenerationFailure("malformed_answer", f"content of {name!r} is {type(content).__name__}, not text")
    if len(content.encode("utf-8")) > MAX_FILE_BYTES:
        return GenerationFailure("file_too_large", f"{name!r} is larger than {MAX_FILE_BYTES} bytes")
    if "\x00" in content:
        return GenerationFailure("binary_file", f"{name!r} is binary (holds NUL characters)")
    return content


def _listed_files(obj: dict[str, Any]) -> list[tuple[str, Any]] | GenerationFailure:
    """(name, content) of the object's `files` (or petscagent-bench's `codes`)."""
    files_field = obj.get("files", obj.get("codes"))
    if files_field is None:
        return []
    if isinstance(files_field, dict):  # {"main.c": "..."} is a common variant
        files_field = [{"name": k, "content": v} for k, v in files_field.items()]
    if not isinstance(files_field, list):
        return GenerationFailure("malformed_answer", "'files' must be a list of {name, content}")
    out = []
    for i, f in enumerate(files_field):
        if not isinstance(f, dict):
            return GenerationFailure("malformed_answer", f"files[{i}] is not an object")
        name = f.get("name", f.get("filename"))
        content = f.get("content", f.get("code"))
        if not isinstance(name, str):
            return GenerationFailure("malformed_answer", f"files[{i}] has no 'name'")
        if content is None:
            return GenerationFailure("malformed_answer", f"files[{i}] ({name!r}) has no 'content'")
        out.append((name, content))
    return out


def _checked_files(raw_files: list[tuple[str, Any]]) -> dict[str, str] | GenerationFailure:
    """Names safe, none twice, every content UTF-8 text within the limits."""
    if not raw_files:
        return GenerationFailure("no_code", "the answer holds no source files")
    if len(raw_files) > MAX_FILES:
        return GenerationFailure("too_many_files", f"{len(raw_files)} files (limit {MAX_FILES})")
    files: dict[str, str] = {}
    for name, content in raw_files:
        try:
            check_file_name(name)
        except ValueError as e:
            return GenerationFailure("unsafe_file_name", str(e))
        if name in files:
            return GenerationFailure("duplicate_file", f"file {name!r} appears twice")
        text = _as_text(name, content)
        if isinstance(text, GenerationFailure):
            return text
        files[name] = text
    return files


def _run_fields(obj: dict[str, Any]) -> tuple[list[int], list[str]] | GenerationFailure:
    """`ranks` (or `nsize`) and `args` (or `cli_args`, a string split like a shell)."""
    ranks = obj.get("ranks", obj.get("nsize", []))
    ranks = [ranks] if isinstance(ranks, (int, float)) else ranks
    if isinstance(ranks, list):  # JSON via protobuf (A2A 1.x data parts) turns 3 into 3.0
        ranks = [int(r) if isinstance(r, float) and r.is_integer() else r for r in ranks]
    if not isinstance(ranks, list) or not all(type(r) is int and 1 <= r <= 4096 for r in ranks):
        return GenerationFailure("malformed_answer", f"'ranks' must be a list of integers 1..4096, got {ranks!r}")
    args = obj.get("args", obj.get("cli_args", []))
    if isinstance(args, str):
        try:
            args = shlex.split(args)
        except ValueError as e:
            return GenerationFailure("malformed_answer", f"'args' string does not split: {e}")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        return GenerationFailure("malformed_answer", "'args' must be a list of strings")
    return ranks, args


def validate_answer(obj: dict[str, Any], extra_files: list[tuple[str, Any]] | None = None
                    ) -> Answer | GenerationFailure:
    """Check an answer object. Accepts our contract (files/entry/ranks/args) and the
    petscagent-bench shape (codes[{filename, code}], nsize, cli_args; first file is
    main). `extra_files` are files that came outside the object (A2A file parts)."""
    if obj.get("refused") is True:
        reason = obj.get("refusal_reason", "")
        return Answer(refused=True, refusal_reason=str(reason)[:4000])
    listed = _listed_files(obj)
    if isinstance(listed, GenerationFailure):
        return listed
    files = _checked_files(list(extra_files or []) + listed)
    if isinstance(files, GenerationFailure):
        return files
    entry = obj.get("entry")
    if entry is None:  # petscagent-bench: the first file is the main file
        entry = next(iter(files))
    if not isinstance(entry, str) or entry not in files:
        return GenerationFailure("entry_not_in_files", f"entry {entry!r} is not among files {sorted(files)}")
    if not entry.endswith((".c", ".cu", ".cxx", ".py")):
        return GenerationFailure("entry_not_in_files",
                                 f"entry {entry!r} is not a compilable source or a Python program")
    run = _run_fields(obj)
    if isinstance(run, GenerationFailure):
        return run
    return Answer(files=files, entry=entry, ranks=run[0], args=run[1])


def checked_for(outcome: Answer | GenerationFailure, problem: Problem) -> Answer | GenerationFailure:
    """An answer whose args or ranks ask for what its problem does not allow is a failure of the
    agent (the prompt says what is allowed), never passed to a run."""
    from hpcbench.submission import request_refusal

    if isinstance(outcome, GenerationFailure) or outcome.refused:
        return outcome
    bad = request_refusal(outcome.args, outcome.ranks, problem)
    return GenerationFailure("disallowed_request", f"{bad[0]}: {bad[1]}") if bad else outcome


def answer_from_text(text: str) -> Answer | GenerationFailure:
    obj = parse_json_answer(text)
    return obj if isinstance(obj, GenerationFailure) else validate_answer(obj)
