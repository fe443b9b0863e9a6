"""`hpcbench generate`: write `<out>/<agent>/<problem>/<attempt>/` for agents under test.

Concurrent up to a limit (an asyncio semaphore over every agent's attempts),
resumable (an attempt folder with a submission.json is finished and is not
regenerated; failed ones are redone only with retry_failed), atomic (each
attempt is written to a hidden temporary folder and renamed into place), and
every failure of the model is an attempt recorded with its reason: the campaign goes on.
A failure of the infrastructure (no key, outage, quota: contract.INFRA_KINDS) is not an
attempt: it is kept apart under `<out>/.errors/` with its whole cause, the attempt folder is
not written, and the next run (or `hpcbench retry`) asks again for exactly those."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import shutil
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hpcbench.agents.base import Agent
from hpcbench.agents.contract import Answer, GenerationFailure, Reply, checked_for
from hpcbench.errors import HpcbenchError
from hpcbench.jobs.records import write_atomic
from hpcbench.problem import ProblemBundle
from hpcbench.submission import Submission

RAW_NAME = "answer.raw.txt"  # the answer as received, beside a failed attempt (never a source)
ERRORS_DIR = ".errors"  # <tree>/.errors/<agent>/<problem>/<attempt>.json: infrastructure errors, retried


@dataclass
class GenerationError:
    """An attempt the infrastructure kept from being made or from coming back."""

    agent: str
    model: str
    problem: str
    attempt: str
    kind: str
    cause: str
    at: str = ""

    def line(self) -> str:
        return f"{self.agent}/{self.problem}/{self.attempt}: {self.kind}: {self.cause}"


@dataclass
class Summary:
    written: Counter = field(default_factory=Counter)  # ok / failed / refused / replayed
    skipped: int = 0
    rejected: list[str] = field(default_factory=list)
    failures: Counter = field(default_factory=Counter)  # taxonomy kind -> count
    agents: list[str] = field(default_factory=list)
    errors: list[GenerationError] = field(default_factory=list)  # infrastructure: not attempts, retried


def submission_for(agent: Agent, problem: str, attempt: str, reply: Reply) -> Submission:
    out = reply.outcome
    base = dict(problem=problem, agent=agent.name, model=agent.model, attempt=attempt, generation=reply.generation)
    if isinstance(out, GenerationFailure):
        return Submission(**base, generation_error=out.reason, generation_error_kind=out.kind)
    if out.refused:
        return Submission(**base, refused=True, refusal_reason=out.refusal_reason)
    return Submission(**base, entry=out.entry, files=sorted(out.files), ranks=out.ranks, args=out.args)


def write_attempt(dest: Path, meta: Submission, answer: Answer | None, raw: str = "") -> None:
    tmp = dest.with_name(f".{dest.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    if answer is not None and not answer.refused:
        for name, text in answer.files.items():
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp / name).write_text(text)
    if meta.generation_error and raw:
        (tmp / RAW_NAME).write_text(raw)
    write_atomic(tmp / "submission.json", meta.model_dump_json(indent=1))
    if dest.exists():
        shutil.rmtree(dest)
    tmp.rename(dest)


def error_path(tree: Path, agent: str, problem: str, attempt: str) -> Path:
    return Path(tree) / ERRORS_DIR / agent / problem / f"{attempt}.json"


def write_error(tree: Path, err: GenerationError) -> None:
    path = error_path(tree, err.agent, err.problem, err.attempt)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(err.__dict__, indent=1))


def clear_error(tree: Path, agent: str, problem: str, attempt: str) -> None:
    error_path(tree, agent, problem, attempt).unlink(missing_ok=True)


def read_errors(tree: Path) -> list[GenerationError]:
    """The infrastructure errors still standing in a generated tree (none answered since)."""
    root = Path(tree) / ERRORS_DIR
    out = []
    for path in sorted(root.glob("*/*/*.json")) if root.is_dir() else []:
        try:
            err = GenerationError(**json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            continue  # not ours: the attempt is redone anyway (it has no submission.json)
        if not (Path(tree) / err.agent / err.problem / err.attempt / "submission.json").is_file():
            out.append(err)
    return out


def finished(dest: Path, retry_failed: bool) -> bool:
    meta = dest / "submission.json"
    if not meta.is_file():
        return False
    if not retry_failed:
        return True
    try:
        return not Submission.model_validate_json(meta.read_text()).generation_error
    except ValueError:
        return False


def replay(agent: Agent, problem_ids: list[str], out: Path, summary: Summary) -> None:
    """Copy what a replay agent holds, byte for byte (submission.json included)."""
    pairs, bad = agent.replay_sources(problem_ids)
    summary.rejected += bad
    for src, rel in pairs:
        dest = out / rel
        meta_text = (src / "submission.json").read_bytes()
        meta = Submission.model_validate_json(meta_text)
        tmp = dest.with_name(f".{dest.name}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for name in meta.files:
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src / name, tmp / name)
        (tmp / "submission.json").write_bytes(meta_text)
        if dest.exists():
            shutil.rmtree(dest)
        tmp.rename(dest)
        summary.written["replayed"] += 1
        if rel.parts[0] not in summary.agents:
            summary.agents.append(rel.parts[0])


async def _one(agent: Agent, bundle: ProblemBundle, attempt: str, dest: Path, timeout_s: float) -> Reply:
    conv = agent.conversation(bundle.problem)  # the public model only: never the bundle's checks or folder
    try:
        return await asyncio.wait_for(conv.first(), timeout_s)
    except asyncio.TimeoutError:
        return Reply(GenerationFailure("timeout", f"no answer within {timeout_s:g} s"))
    except Exception as e:  # one broken attempt never ends the campaign
        return Reply(GenerationFailure("protocol_error", f"{type(e).__name__}: {str(e)[:500]}"))
    finally:
        try:
            await conv.close()
        except Exception:
            pass


async def _todo(agents: list[Agent], bundles: dict[str, ProblemBundle], attempts: int, out: Path,
                retry_failed: bool, summary: Summary) -> list[tuple[Agent, ProblemBundle, str, Path]]:
    """Replays copied now; the attempts of generating agents not finished yet."""
    todo: list[tuple[Agent, ProblemBundle, str, Path]] = []
    for agent in agents:
        if agent.replay:
            replay(agent, sorted(bundles), out, summary)
            continue
        await agent.start()
        if agent.name in summary.agents:  # two agents whose cards share a name must not share a folder
            agent.name = next(f"{agent.name}-{i}" for i in range(2, 1000) if f"{agent.name}-{i}" not in summary.agents)
        summary.agents.append(agent.name)
        for pid in sorted(bundles):
            for k in range(1, attempts + 1):
                dest = out / agent.name / pid / str(k)
                if finished(dest, retry_failed):
                    summary.skipped += 1
                else:
                    todo.append((agent, bundles[pid], str(k), dest))
    return todo


async def generate_submissions(agents: list[Agent], bundles: dict[str, ProblemBundle], attempts: int, out: Path,
                   concurrency: int = 4, timeout_s: float = 900.0, retry_failed: bool = False,
                   progress: Callable[[Counter], None] | None = None) -> Summary:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    summary = Summary()
    sem = asyncio.Semaphore(max(1, concurrency))
    counts: Counter = Counter()
    todo = await _todo(agents, bundles, attempts, out, retry_failed, summary)
    counts["pending"] = len(todo)
    if progress:
        progress(counts)

    async def run(agent: Agent, bundle: ProblemBundle, attempt: str, dest: Path) -> None:
        async with sem:
            counts["pending"] -= 1
            counts["running"] += 1
            if progress:
                progress(counts)
            reply = await _one(agent, bundle, attempt, dest, timeout_s)
            reply.outcome = checked_for(reply.outcome, bundle.problem)  # disallowed args/ranks: its failure
            counts["running"] -= 1
            if isinstance(reply.outcome, GenerationFailure) and reply.outcome.infrastructure:
                when = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
                err = GenerationError(agent.name, agent.model, bundle.id, attempt, reply.outcome.kind,
                                      reply.outcome.reason, when)
                write_error(out, err)
                summary.errors.append(err)
                counts["errors"] += 1
            else:
                record(agent, bundle.id, attempt, dest, reply)
                counts["done"] += 1
            if progress:
                progress(counts)

    def record(agent: Agent, problem: str, attempt: str, dest: Path, reply: Reply) -> None:
        meta = submission_for(agent, problem, attempt, reply)
        answer = reply.outcome if isinstance(reply.outcome, Answer) else None
        write_attempt(dest, meta, answer, reply.raw)
        clear_error(out, agent.name, problem, attempt)
        kind = "failed" if meta.generation_error else "refused" if meta.refused else "ok"
        summary.written[kind] += 1
        if meta.generation_error:
            summary.failures[meta.generation_error_kind] += 1
        counts["failed"] += kind == "failed"

    try:
        await asyncio.gather(*(run(*t) for t in todo))
    finally:
        for agent in agents:
            if not agent.replay:
                await agent.close()
    return summary


def generate_tree(agents: list[Agent], bundles: dict[str, ProblemBundle], out: Path, timeout_s: float = 900.0,
                  progress: Callable[[Counter], None] | None = None, attempts: int = 1) -> Summary:
    """`attempts` per problem of each agent into `out` (resumable), for `run`/`submit`
    with generating agents; the tree is then planned like any other."""
    async def checked() -> Summary:
        bad = await preflight(agents)
        if bad:  # nothing planned, nothing generated: an outage is not a campaign's result
            raise PreflightError(bad)
        return await generate_submissions(agents, bundles, attempts, out, timeout_s=timeout_s, progress=progress)

    return asyncio.run(checked())


class PreflightError(HpcbenchError):
    def __init__(self, reasons: list[str]):
        self.reasons = reasons
        super().__init__("the agents under test cannot be asked; nothing was planned or generated:\n  "
                         + "\n  ".join(reasons))


async def preflight(agents: list[Agent]) -> list[str]:
    """Why each agent that cannot be asked cannot (key, endpoint, model), before anything is
    planned: an outage found here costs nothing, found later it costs a campaign."""
    found = []
    for agent in agents:
        if agent.replay:
            continue
        try:
            bad = await agent.preflight()
        except Exception as e:  # a broken check must not pass as a working endpoint
            bad = GenerationFailure("provider_error", f"{type(e).__name__}: {e}")
        if bad is not None:
            found.append(f"agent {agent.name or agent.kind} ({agent.model or agent.kind}): {bad.kind}: {bad.reason}")
    return found
