"""Per-run resume of a case timed at several rank counts (jobs/resume.py, jobs/job.py): the
rank counts' timed runs alternate, so a stopped try's runs are kept only for a case that
finished at every rank count. Records built here; the real stop and resume through Slurm is
tests/test_pack_slurm.py."""

import json
import shutil

import pytest

from hpcbench.jobs.job import by_case
from hpcbench.jobs.records import CaseRun, JobResult, RunResult
from hpcbench.jobs.resume import finished_group
from hpcbench.problem import load_problems
from hpcbench.resources import data_path


def _case(name: str, ranks: int) -> CaseRun:
    return CaseRun(case=name, args=[], ranks=ranks, time_limit_s=10)


def _run(case: str, ranks: int, kind: str, repeat: int = 0, exit_code: int = 0) -> RunResult:
    return RunResult(case=case, ranks=ranks, kind=kind, repeat=repeat, command=["x"], exit_code=exit_code, wall_s=1.0)


def _stopped(*runs: RunResult) -> JobResult:
    return JobResult(job_id="j", agent="a", problem="p", attempt="1", status="cancelled", runs=list(runs))


def test_cases_are_grouped_by_name_with_their_rank_counts_in_order():
    runs = [_case("n4", 1), _case("n4", 2), _case("n8", 1), _case("n8", 2), _case("held-out-1", 2)]
    assert [[(c.case, c.ranks) for c in g] for g in by_case(runs)] == [
        [("n4", 1), ("n4", 2)], [("n8", 1), ("n8", 2)], [("held-out-1", 2)]]


def test_a_case_finished_at_one_rank_count_only_is_run_again_at_all():
    group = [_case("n4", 1), _case("n4", 2)]
    two = lambda c: 2  # noqa: E731
    # stopped after 1, 2, 1, 2, 1: the 1-rank point has its repeats, the 2-rank one does not
    partial = _stopped(_run("n4", 1, "instrumented"), _run("n4", 2, "instrumented"), _run("n4", 1, "timing", 0),
                       _run("n4", 2, "timing", 0), _run("n4", 1, "timing", 1))
    assert finished_group(partial, group, two) is None
    whole = _stopped(*partial.runs, _run("n4", 2, "timing", 1))
    kept = finished_group(whole, group, two)
    assert kept is not None and {r: [x.kind for x in v] for r, v in kept.items()} == {
        1: ["instrumented", "timing", "timing"], 2: ["instrumented", "timing", "timing"]}
    # a rank count whose instrumented run failed is finished by that run alone
    failed = _stopped(_run("n4", 1, "instrumented"), _run("n4", 2, "instrumented", exit_code=1),
                      _run("n4", 1, "timing", 0), _run("n4", 1, "timing", 1))
    kept = finished_group(failed, group, two)
    assert kept is not None and [x.kind for x in kept[2]] == ["instrumented"] and len(kept[1]) == 3
    assert finished_group(None, group, two) is None


def test_a_problem_listing_a_rank_count_twice_is_refused_at_loading(tmp_path):
    """Groups are keyed by rank count: a case (or held-out spec) at ranks [2, 2] would lose a run."""
    for where in ("case", "held_out"):
        root = tmp_path / where
        shutil.copytree(data_path("problems") / "vec-scatter", root / "vec-scatter")
        pj = root / "vec-scatter" / "problem.json"
        d = json.loads(pj.read_text())
        if where == "case":
            d["cases"][0]["ranks"] = [2, 2]
        else:
            d["held_out"]["ranks"] = [3, 3]
        pj.write_text(json.dumps(d))
        with pytest.raises(Exception, match="a rank count appears twice"):
            load_problems(root)
