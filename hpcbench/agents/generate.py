"""`hpcbench generate`: write `<out>/<agent>/<problem>/<attempt>/` for agents under test.

Concurrent up to a limit (an asyncio semaphore over every agent's attempts),
resumable (an attempt folder with a submission.json is finished and is not
regenerated; failed ones are redone only with retry_failed), atomic (each
attempt is written to a hidden temporary folder and renamed into place), and
every failure is an attempt recorded with its reason: the campaign goes on."""

from __future__ import annotations

import asyncio
import shutil
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hpcbench.agents.base import Agent
from hpcbench.agents.contract import Answer, GenerationFailure, Reply, checked_for
from hpcbench.jobs.records import write_atomic
from hpcbench.problem import ProblemBundle
from hpcbench.submission import Submission

RAW_NAME = "answer.raw.txt"  # the answer as received, beside a failed attempt (never a source)


@dataclass
class Summary:
    written: Counter = field(default_factory=Counter)  # ok / failed / refused / replayed
    skipped: int = 0
    rejected: list[str] = field(default_factory=list)
    failures: Counter = field(default_factory=Counter)  # taxonomy kind -> count
    agents: list[str] = field(default_factory=list)


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


async def generate(agents: list[Agent], bundles: dict[str, ProblemBundle], attempts: int, out: Path,
                   concurrency: int = 4, timeout_s: float = 900.0, retry_failed: bool = False,
                   progress: Callable[[Counter], None] | None = None) -> Summary:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    summary = Summary()
    sem = asyncio.Semaphore(max(1, concurrency))
    counts: Counter = Counter()
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
            reply.outcome = checked_for(reply.outcome, bundle.problem)
            meta = submission_for(agent, bundle.id, attempt, reply)
            answer = reply.outcome if isinstance(reply.outcome, Answer) else None
            write_attempt(dest, meta, answer, reply.raw)
            kind = "failed" if meta.generation_error else "refused" if meta.refused else "ok"
            summary.written[kind] += 1
            if meta.generation_error:
                summary.failures[meta.generation_error_kind] += 1
            counts["running"] -= 1
            counts["done"] += 1
            counts["failed"] += kind == "failed"
            if progress:
                progress(counts)

    try:
        await asyncio.gather(*(run(*t) for t in todo))
    finally:
        for agent in agents:
            if not agent.replay:
                await agent.close()
    return summary


def generate_tree(agents: list[Agent], bundles: dict[str, ProblemBundle], out: Path, timeout_s: float = 900.0,
                  progress: Callable[[Counter], None] | None = None) -> Summary:
    """One attempt per problem of each agent into `out` (resumable), for `run`/`submit`
    with generating agents; the tree is then planned like any other."""
    return asyncio.run(generate(agents, bundles, 1, out, timeout_s=timeout_s, progress=progress))
