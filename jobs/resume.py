"""Per-run resume: a job stopped part-way (cancelled, or left over when a packed allocation
ended) set aside what had finished in cancelled.json; its rerun keeps those runs and runs
only the rest. A case counts as finished when its instrumented run and all its timed
repeats are there (a run cut off by the stop is never in the partial record); a case's rank
counts are timed interleaved (jobs/job.py), so they are kept only all together: one rank count
timed again alone would no longer share the others' conditions."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from hpcbench.jobs.records import CaseRun, JobResult, JobSpec, RunResult

ASIDE, KEPT = "cancelled.json", "resume.json"


def keep_for_resume(work_dir: Path) -> None:
    """Before a fresh try: the stopped try's partial record moves out of the way of the
    executor (which reads cancelled.json as "this try was cancelled") to where the job reads it."""
    aside = work_dir / ASIDE
    if aside.is_file():
        aside.replace(work_dir / KEPT)


def hand_back(record_path: Path, work_dir: Path) -> None:
    """A finished job's record becomes its next try's partial record (what previous_partial
    takes up): rerun with more to do (validate-checks adds a valgrind run), the job keeps these
    runs instead of running every case again. The record itself goes: the rerun writes it anew."""
    done = JobResult.model_validate_json(record_path.read_text())
    work_dir.mkdir(parents=True, exist_ok=True)
    (work_dir / KEPT).write_text(done.model_copy(update={"status": "cancelled"}).model_dump_json())
    record_path.unlink()


def previous_partial(spec: JobSpec) -> JobResult | None:
    """What an earlier, stopped try of this job finished (None: nothing usable). Read once:
    the files are removed, and a new stop sets aside a new partial record with these runs in it."""
    work = Path(spec.work_dir)
    found = None
    for name in (ASIDE, KEPT):
        try:
            res = JobResult.model_validate_json((work / name).read_text())
        except (OSError, ValueError):
            continue
        usable = res.job_id == spec.job_id and res.status == "cancelled"
        if usable and (found is None or len(res.runs) > len(found.runs)):
            found = res
    for name in (ASIDE, KEPT):
        (work / name).unlink(missing_ok=True)
    return found


def finished_case(previous: JobResult | None, case: CaseRun, repeats: int) -> list[RunResult] | None:
    """The instrumented and timed runs of `case` from the earlier try, when all are there."""
    if previous is None:
        return None
    mine = [r for r in previous.runs if r.case == case.case and r.ranks == case.ranks]
    inst = [r for r in mine if r.kind == "instrumented"]
    if not inst:
        return None
    if inst[0].exit_code != 0:
        return inst[:1]
    timing = [r for r in mine if r.kind == "timing"]
    return inst[:1] + timing[:repeats] if len(timing) >= repeats else None


def finished_group(previous: JobResult | None, group: list[CaseRun], repeats_of: Callable[[CaseRun], int]
                   ) -> dict[int, list[RunResult]] | None:
    """{ranks: runs} of one case at all its rank counts when every one of them finished."""
    kept = {c.ranks: finished_case(previous, c, repeats_of(c)) for c in group}
    if any(v is None for v in kept.values()):
        return None
    return {r: v for r, v in kept.items() if v is not None}


def finished_nulls(previous: JobResult | None, ranks: int, repeats: int) -> list[RunResult] | None:
    if previous is None:
        return None
    nulls = [r for r in previous.runs if r.kind == "null" and r.ranks == ranks]
    return nulls[:repeats] if len(nulls) >= repeats else None
