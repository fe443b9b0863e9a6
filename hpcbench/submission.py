"""Submission folders `<agent>/<problem>/<attempt>/` with their `submission.json`.

Loading is where untrusted input is checked: a bad submission is rejected with
the file and the reason, and the rest of the campaign goes on."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, field_validator, model_validator

from hpcbench.agent_options import args_refusal, ranks_refusal
from hpcbench.errors import format_validation_error
from hpcbench.jobs.untrusted_files import UnsafeFile, read_untrusted
from hpcbench.problem import Problem, language_of

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$")
C_SUFFIXES = (".c", ".h", ".cu", ".cxx", ".hpp", ".cuh")
SOURCE_SUFFIXES = (*C_SUFFIXES, ".py")
COMPILED_SUFFIXES = (".c", ".cu", ".cxx")
PYTHON_SUFFIX = ".py"  # problem.language_of
MAX_FILE_BYTES = 1 << 20
MAX_META_BYTES = 1 << 20  # submission.json: metadata and generation cost, never this large
MAX_FILES = 64


def display_path(path: Path | str) -> str:
    """A path as printable UTF-8 text: bytes of a non-UTF-8 name (kept by Python as
    surrogates) are shown as \\xNN, so messages and JSON manifests can always carry it."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


class RepairRun(BaseModel):
    model_config = ConfigDict(extra="forbid")

    case: str
    ranks: int
    exit_code: int | None = None
    stopped_reason: str = ""


class RepairRound(BaseModel):
    """One build-and-run round of the repair loop (agents/repair_agent.py)."""

    model_config = ConfigDict(extra="forbid")

    round: int
    build_ok: bool
    runs: list[RepairRun] = []
    ok: bool
    follow_up_failed: str = ""  # the follow-up answer was no answer: the earlier one kept


class GenerationDetails(BaseModel):
    """What a kind of agent adds about how it produced the attempt; every field optional."""

    model_config = ConfigDict(extra="forbid")

    prompt_version: str = ""  # the contract prompt the agent was sent (agents/contract.py)
    finish_reason: str = ""  # the provider's stop reason (litellm: "stop", "length", ...)
    cost_note: str = ""  # why cost_usd is 0 when tokens were used: no price known
    protocol: str = ""  # A2A: the protocol version(s) the agent's card offers
    wire_notes: list[str] = []  # A2A: where the answer bent the protocol (and how it was read)
    inner_agent: str = ""  # repair: the agent it wraps
    rounds: list[RepairRound] = []  # repair: each round, in order
    other: dict[str, JsonValue] = {}  # a plugin agent's own facts, kept as written


class Generation(BaseModel):
    """What producing the attempt cost; empty for hand-written submissions."""

    model_config = ConfigDict(extra="forbid")

    prompt_tokens: int = Field(0, ge=0)
    completion_tokens: int = Field(0, ge=0)
    cost_usd: float = Field(0.0, ge=0, allow_inf_nan=False)
    latency_s: float = Field(0.0, ge=0, allow_inf_nan=False)
    turns: int = Field(0, ge=0)
    details: GenerationDetails = GenerationDetails()

    @model_validator(mode="before")
    @classmethod
    def _details_written_beside(cls, data: object) -> object:
        """Trees written before `details` carry these facts beside the costs: read them into
        `details` (the known names into their fields, any other into `other`), losing none."""
        if not isinstance(data, dict):
            return data
        loose = {k: v for k, v in data.items() if k not in cls.model_fields}
        if not loose:
            return data
        details = dict(data.get("details") or {})
        known = set(GenerationDetails.model_fields) - {"other"}
        details.update({k: v for k, v in loose.items() if k in known})
        details["other"] = {**details.get("other", {}), **{k: v for k, v in loose.items() if k not in known}}
        return {**{k: v for k, v in data.items() if k in cls.model_fields}, "details": details}


class Submission(BaseModel):
    model_config = ConfigDict(extra="forbid")

    problem: str
    agent: str
    model: str = ""
    attempt: str = "1"
    entry: str = ""
    files: list[str] = []  # empty only for a refusal or a failed generation
    ranks: list[Annotated[int, Field(ge=1, le=65536)]] = []
    args: list[str] = []
    refused: bool = False
    refusal_reason: str = ""
    generation: Generation = Generation()
    # A failed generation (no usable answer) is recorded, not dropped: the reason and its
    # taxonomy key (hpcbench.agents.contract.FAILURE_KINDS) reach the report through campaign.h5.
    generation_error: str = ""
    generation_error_kind: str = ""

    @field_validator("attempt", mode="before")
    @classmethod
    def _attempt(cls, v: object) -> str:
        return str(v)

    @field_validator("agent", "attempt")
    @classmethod
    def _name(cls, v: str) -> str:
        if not NAME_RE.match(v):
            raise ValueError(f"{v!r} must be letters, digits, '.', '_', '+' or '-' (at most 128)")
        return v

    @field_validator("args")
    @classmethod
    def _args(cls, v: list[str]) -> list[str]:
        if len(v) > 256:
            raise ValueError("at most 256 arguments")
        for a in v:
            if "\x00" in a or len(a) > 4096:
                raise ValueError(f"argument {a[:40]!r} holds a NUL byte or is longer than 4096 characters")
        return v

    @field_validator("files")
    @classmethod
    def _files(cls, v: list[str]) -> list[str]:
        if len(v) > MAX_FILES:
            raise ValueError(f"at most {MAX_FILES} files")
        if len(set(v)) != len(v):
            raise ValueError("duplicate file names")
        for name in v:
            check_file_name(name)
        return v

    @model_validator(mode="after")
    def _needs_code(self) -> Submission:
        if not (self.refused or self.generation_error) and (not self.files or not self.entry):
            raise ValueError("a submission that neither refused nor failed to generate needs 'files' and 'entry'")
        return self


# Generation failures that are the infrastructure's, not the agent's (agents/contract.FAILURE_KINDS
# describes them): never a submission, always an error to retry.
INFRA_KINDS = frozenset({"credentials", "unreachable", "rate_limited", "provider_error", "request_timeout"})


def check_file_name(name: str) -> None:
    """A file name must stay inside its submission folder: relative, no '..', no
    odd characters. Raises ValueError with the reason."""
    p = PurePosixPath(name)
    if not name or name != name.strip() or "\\" in name or "\x00" in name:
        raise ValueError(f"bad file name {name!r}")
    if p.is_absolute() or any(part in ("..", ".", "") for part in name.split("/")):
        raise ValueError(f"file name {name!r} escapes the submission folder")
    if not all(re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", part) for part in p.parts):
        raise ValueError(f"file name {name!r} has characters outside [A-Za-z0-9._-]")
    if not name.endswith(SOURCE_SUFFIXES):
        raise ValueError(f"file {name!r} is not a source file ({', '.join(SOURCE_SUFFIXES)})")


@dataclass(frozen=True)
class LoadedSubmission:
    meta: Submission
    folder: Path

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.meta.agent, self.meta.problem, self.meta.attempt)


@dataclass(frozen=True)
class Rejected:
    path: Path
    field: str | None
    reason: str

    def __str__(self) -> str:
        return display_path(self.path) + (f": field '{self.field}'" if self.field else "") + f": {self.reason}"

    def as_dict(self) -> dict:
        """For campaign.json: a non-UTF-8 folder name must not stop the manifest being written."""
        return {"path": display_path(self.path), "field": self.field, "reason": self.reason}


MAX_META_DEPTH = 32  # metadata is a few levels deep; Python's json recurses (RecursionError at ~1000)
MAX_META_INT_DIGITS = 30


def _nesting_depth(text: str) -> int:
    """How deeply JSON text nests arrays and objects, counted without recursion (strings skipped)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


class _NotPlainJson(ValueError):
    pass


def _plain_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_META_INT_DIGITS:
        raise _NotPlainJson(f"holds an integer of {len(text)} digits")
    return int(text)


def _no_constant(name: str) -> float:
    raise _NotPlainJson(f"holds {name}, which is not JSON")


def parse_meta(data: bytes) -> object:
    """submission.json's bytes as JSON, bounded: nesting, integer size and NaN/Infinity are refused
    (ValueError with the reason) before Python's recursive decoder or int() could fail on them."""
    text = data.decode("utf-8")
    if _nesting_depth(text) > MAX_META_DEPTH:
        raise _NotPlainJson(f"nests arrays or objects deeper than {MAX_META_DEPTH} levels")
    return json.loads(text, parse_int=_plain_int, parse_constant=_no_constant)


def _read_meta(folder: Path) -> dict | Rejected:
    """submission.json as a JSON object, or why it cannot be one."""
    meta_path = folder / "submission.json"
    try:
        raw = parse_meta(read_untrusted(folder, "submission.json", MAX_META_BYTES))
    except FileNotFoundError:
        return Rejected(meta_path, None, "file not found")
    except UnsafeFile as e:
        return Rejected(meta_path, None, str(e))
    except OSError as e:
        return Rejected(meta_path, None, f"cannot be read: {e.strerror or e}")
    except UnicodeDecodeError:
        return Rejected(meta_path, None, "not UTF-8 text")
    except json.JSONDecodeError as e:
        return Rejected(meta_path, None, f"malformed JSON at line {e.lineno} column {e.colno}: {e.msg}")
    except (_NotPlainJson, RecursionError) as e:
        return Rejected(meta_path, None, str(e) if isinstance(e, _NotPlainJson) else "nested too deeply")
    if not isinstance(raw, dict):
        return Rejected(meta_path, None, "must be a JSON object")
    try:  # "\udcff" is valid JSON but no UTF-8: it would stop campaign.json and the specs being written
        json.dumps(raw, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as e:
        return Rejected(meta_path, None, f"holds an escaped lone surrogate ({e.object[e.start:e.end]!a}), "
                                         "which is not text")
    return raw


def _names_rejected(meta_path: Path, meta: Submission, given: dict[str, str | None],
                    known_problems: set[str] | None, reserved: frozenset[str]) -> Rejected | None:
    """Agent, problem and attempt as the folders say, a known problem, no reserved agent name."""
    for field_name, want in given.items():
        got = getattr(meta, field_name)
        if want is not None and got != want:
            return Rejected(meta_path, field_name, f"is {got!r} but the folder says {want!r}")
    if known_problems is not None and meta.problem not in known_problems:
        return Rejected(meta_path, "problem", f"unknown problem {meta.problem!r}")
    if meta.agent in reserved:
        return Rejected(meta_path, "agent", f"{meta.agent!r} is a reserved agent name (the bundled reference and "
                                            "sample agents use it); rename the agent folder")
    return None


def _language_rejected(meta_path: Path, meta: Submission) -> Rejected | None:
    """A Python submission holds only `.py` files; a C one none (one program, one language)."""
    if meta.entry not in meta.files:
        return Rejected(meta_path, "entry", f"{meta.entry!r} is not among files {meta.files}")
    if language_of(meta.entry) == "python":
        other = [f for f in meta.files if not f.endswith(PYTHON_SUFFIX)]
        if other:
            return Rejected(meta_path, "files", f"a Python submission (entry {meta.entry!r}) holds only .py files, "
                                                f"not {other[:3]}")
        return None
    if not meta.entry.endswith(COMPILED_SUFFIXES):
        return Rejected(meta_path, "entry", f"{meta.entry!r} is not a compilable source or a Python program")
    py = [f for f in meta.files if f.endswith(PYTHON_SUFFIX)]
    if py:
        return Rejected(meta_path, "files", f"a C submission (entry {meta.entry!r}) holds Python files {py[:3]}")
    return None


def _sources_rejected(folder: Path, meta: Submission) -> Rejected | None:
    """The entry is a compilable source or a Python program among the files, of one language;
    each file is there, regular, UTF-8 text."""
    meta_path = folder / "submission.json"
    bad = _language_rejected(meta_path, meta)
    if bad is not None:
        return bad
    for name in meta.files:
        try:
            data = read_untrusted(folder, name, MAX_FILE_BYTES)
        except FileNotFoundError:
            return Rejected(meta_path, "files", f"{name!r} is missing")
        except UnsafeFile as e:
            return Rejected(meta_path, "files", str(e))
        except OSError as e:
            return Rejected(meta_path, "files", f"{name!r} cannot be read: {e.strerror or e}")
        if b"\x00" in data:
            return Rejected(meta_path, "files", f"{name!r} is binary")
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return Rejected(meta_path, "files", f"{name!r} is not UTF-8 text")
    return None


def request_refusal(args: list[str], ranks: list[int], problem: Problem) -> tuple[str, str] | None:
    """(field, reason) when a submission's `args` or `ranks` ask what its problem does not allow."""
    why = args_refusal(args, problem.agent_options, problem.case_options())
    if why:
        return "args", why
    why = ranks_refusal(ranks, problem.ranks_allowed())
    return ("ranks", why) if why else None


def request_rejected(sub: LoadedSubmission, problem: Problem) -> Rejected | None:
    """The rejection of a loaded submission whose args or ranks its problem does not allow."""
    if sub.meta.refused or sub.meta.generation_error:
        return None
    language = language_of(sub.meta.entry)
    if language not in problem.languages:
        return Rejected(sub.folder / "submission.json", "entry",
                        f"{sub.meta.entry!r} is a {language} program; problem {problem.id!r} accepts "
                        f"{', '.join(problem.languages)} (problem.json languages)")
    bad = request_refusal(sub.meta.args, sub.meta.ranks, problem)
    return Rejected(sub.folder / "submission.json", *bad) if bad else None


def load_submission(folder: Path, agent: str | None = None, problem: str | None = None,
                    known_problems: set[str] | None = None, attempt: str | None = None,
                    reserved: frozenset[str] = frozenset(), problems: Mapping[str, Problem] | None = None
                    ) -> LoadedSubmission | Rejected:
    """`reserved`: agent names a user's submission may not take (the bundled reference
    and sample agents, hpcbench.agents.reserved_agent_names). `problems`: the problems whose
    `agent_options` and `allowed_ranks` the submission's args and ranks must keep to.
    Whatever the folder holds, the answer is a LoadedSubmission or a Rejected naming it:
    one bad submission never stops a campaign."""
    try:
        return _load_submission(folder, agent, problem, known_problems, attempt, reserved, problems)
    except Exception as e:  # a case the checks above did not foresee: still this submission's, named
        return Rejected(Path(folder) / "submission.json", None,
                        f"cannot be loaded ({type(e).__name__}: {str(e)[:200]})")


def _load_submission(folder: Path, agent: str | None = None, problem: str | None = None,
                    known_problems: set[str] | None = None, attempt: str | None = None,
                    reserved: frozenset[str] = frozenset(), problems: Mapping[str, Problem] | None = None
                    ) -> LoadedSubmission | Rejected:
    folder = Path(folder)
    meta_path = folder / "submission.json"
    raw = _read_meta(folder)
    if isinstance(raw, Rejected):
        return raw
    # The tree's folder names are authoritative for agent and problem.
    given = {"agent": agent, "problem": problem, "attempt": attempt}
    for k, v in given.items():
        if v is not None:
            raw.setdefault(k, v)
    try:
        meta = Submission.model_validate(raw)
    except ValidationError as e:
        return Rejected(meta_path, *format_validation_error(e))
    bad = _names_rejected(meta_path, meta, given, known_problems, reserved)
    if bad is None and meta.generation_error_kind in INFRA_KINDS:
        bad = Rejected(meta_path, "generation_error_kind",
                       f"{meta.generation_error_kind!r} is an infrastructure error ({meta.generation_error[:300]}), "
                       "not an attempt of the agent: generate it again (hpcbench retry, or generate)")
    if bad is None and not (meta.refused or meta.generation_error):
        bad = _sources_rejected(folder, meta)
    if bad is None and problems is not None and meta.problem in problems:
        bad = request_rejected(LoadedSubmission(meta, folder), problems[meta.problem])
    return bad or LoadedSubmission(meta, folder)


def _subdirs(folder: Path, bad: list[Rejected]) -> list[Path]:
    """Folders below `folder`; a symlink among them is rejected, never followed (an
    attempt folder linked to a problem's hidden reference would be scored as the agent's)."""
    out = []
    for p in sorted(folder.iterdir()):
        if p.name.startswith("."):
            continue
        if p.is_symlink():
            bad.append(Rejected(p, None, "is a symbolic link; submission trees must hold real folders"))
        elif p.is_dir():
            out.append(p)
    return out


def load_tree(root: Path, known_problems: set[str], reserved: frozenset[str] = frozenset(),
              problems: Mapping[str, Problem] | None = None) -> tuple[list[LoadedSubmission], list[Rejected]]:
    """Every `<agent>/<problem>/<attempt>/` under `root` (`problems`: see load_submission)."""
    root = Path(root)
    if not root.is_dir():
        return [], [Rejected(root, None, "submission tree not found")]
    ok: list[LoadedSubmission] = []
    bad: list[Rejected] = []
    for agent_dir in _subdirs(root, bad):
        if not NAME_RE.match(agent_dir.name):
            bad.append(Rejected(agent_dir, None, "agent folder name must be letters, digits, '.', '_', '+' or '-' "
                                                 "(UTF-8, at most 128)"))
            continue
        if agent_dir.name in reserved:
            bad.append(Rejected(agent_dir, None, f"{agent_dir.name!r} is a reserved agent name (the bundled "
                                                 "reference and sample agents use it); rename the folder"))
            continue
        for prob_dir in _subdirs(agent_dir, bad):
            if prob_dir.name not in known_problems:
                bad.append(Rejected(prob_dir, None, f"unknown problem {display_path(prob_dir.name)!r}"))
                continue
            for att in _subdirs(prob_dir, bad):
                res = load_submission(att, agent_dir.name, prob_dir.name, known_problems, att.name, reserved,
                                      problems)
                (ok if isinstance(res, LoadedSubmission) else bad).append(res)  # type: ignore[arg-type]
    return ok, bad


def reference_submission(bundle_folder: Path, problem_id: str) -> LoadedSubmission | Rejected:
    return load_submission(Path(bundle_folder) / "reference", "reference", problem_id, None)


# The bundled petsc4py references' agent and folder name (problems/<id>/reference-python): a
# submission like any other, checked against the problem's languages, args and ranks.
PYTHON_REFERENCE_AGENT = "reference-python"


def python_reference_submission(bundle_folder: Path, problem_id: str, problem: Problem) -> LoadedSubmission | Rejected:
    return load_submission(Path(bundle_folder) / PYTHON_REFERENCE_AGENT, PYTHON_REFERENCE_AGENT, problem_id, None,
                           problems={problem_id: problem})


__all__ = ["Submission", "LoadedSubmission", "Rejected", "UnsafeFile", "load_submission", "load_tree",
           "request_refusal", "request_rejected",
           "reference_submission", "python_reference_submission", "PYTHON_REFERENCE_AGENT",
           "check_file_name", "format_validation_error", "read_untrusted", "display_path"]
