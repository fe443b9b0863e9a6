"""What the pipeline asked of a job beyond its profile, recorded so that planning asks it again.

Two of a profile's rules act on a job after it ran (hpcbench/pipeline/execute.py): a run stopped
at its time limit while it waited for a CPU is retried with longer limits
(CampaignProfile.retry_starved), and a program that passed every check gets a valgrind run
(valgrind: passing). Each is an escalation of that job, written here before the job runs again;
`plan_jobs` applies them to the job's spec, so a re-plan (resume, a second invocation) writes
the spec that actually ran and keeps its record, instead of seeing a changed spec and running
the job again with the plain limits.

    <campaign>/escalations.json   {job_id: {"time_limit_factor": 4.0, "valgrind": true}}"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from hpcbench.errors import HpcbenchError
from hpcbench.jobs.records import JobSpec, write_atomic
from hpcbench.strict import FrozenStrict

FILE = "escalations.json"


class Escalation(FrozenStrict):
    time_limit_factor: float = 1.0
    valgrind: bool = False


def path(root: Path) -> Path:
    return Path(root) / FILE


def read(root: Path) -> dict[str, Escalation]:
    p = path(root)
    if not p.is_file():
        return {}
    try:
        return {jid: Escalation.model_validate(e) for jid, e in json.loads(p.read_text()).items()}
    except (ValueError, AttributeError, ValidationError) as e:
        raise HpcbenchError(f"{p}: unreadable ({str(e).splitlines()[0][:200]}); the pipeline writes it when it "
                            "retries a job: remove it to plan every job as its profile says") from None


def add(root: Path, job_ids: list[str], time_limit_factor: float = 1.0, valgrind: bool = False) -> None:
    """Escalate these jobs (what a job already has is kept: factors multiply, valgrind stays on)."""
    known = read(root)
    for jid in job_ids:
        old = known.get(jid, Escalation())
        known[jid] = Escalation(time_limit_factor=old.time_limit_factor * time_limit_factor,
                                valgrind=old.valgrind or valgrind)
    write_atomic(path(root), json.dumps({j: e.model_dump() for j, e in sorted(known.items())}, indent=1))


def drop(root: Path, job_ids: list[str]) -> None:
    """Forget these jobs' escalations (their sources changed: another program now)."""
    known = read(root)
    dropped = [j for j in job_ids if known.pop(j, None) is not None]
    if dropped:
        write_atomic(path(root), json.dumps({j: e.model_dump() for j, e in sorted(known.items())}, indent=1))


def apply(spec: JobSpec, esc: Escalation | None) -> JobSpec:
    """The spec as the escalated job runs: every run's limit longer, valgrind on."""
    if esc is None:
        return spec
    runs = [r.model_copy(update={"time_limit_s": r.time_limit_s * esc.time_limit_factor}) for r in spec.runs]
    return spec.model_copy(update={"runs": runs, "valgrind": spec.valgrind or esc.valgrind})
