"""The performance case is drawn at planning (hpcbench/plan/perf_draw.py, issue 33): its
arguments are never a published case's, differ between campaigns, stay the same when a
campaign is planned again, and a program that prints the old public case's known answer
when it sees those arguments gains nothing from it."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import pytest

from hpcbench.errors import ConfigError, HpcbenchError
from hpcbench.evaluators.base import EvalContext
from hpcbench.evaluators.metrics.execution_time import ExecutionTime
from hpcbench.jobs.records import JobResult
from hpcbench.plan import PlanRequest, create_campaign
from hpcbench.plan.held_out import read_performance_draw
from hpcbench.plan.perf_draw import draw_performance, option_values, performance_args, published_as, with_drawn
from hpcbench.problem import CompareCheck, Performance, load_problems
from hpcbench.profile import FULL
from hpcbench.site import load_site
from hpcbench.submission import Submission, reference_submission
from hpcbench.validation.library import Edit, Program, apply_edits
from tests.conftest import hpcbench, profile_file
from tests.test_perf_metric import run

PROBLEMS = load_problems()
TIMED = sorted(pid for pid, b in PROBLEMS.items() if b.problem.performance is not None)
# Every problem's performance case draws: rosenbrock's only -scale (the minimiser x_i = s; its
# quasi-Newton iteration counts jump with -alpha, at -n 20 from 800 to 2300, and lmvm and bncg
# do not converge at -alpha 81 or 84, so -n and -alpha stay nominal; the path from x = 0 is the
# same at every scale: docs/problems.md)
PUBLIC: set[str] = set()
DRAWN = [p for p in TIMED if p not in PUBLIC]


def test_every_performance_case_draws_and_no_draw_is_public():
    """Every problem with a performance case draws options; over 60 seeds every draw lies in its
    ranges, none is a published case or the
    nominal one, and the draws vary (bratu-fold and stokes-fieldsplit draw an integer size
    from 6 and 7 values beside a real: tests/test_draw_space.py)."""
    assert len(TIMED) == 12 and len(DRAWN) == 12, TIMED
    # an option a case leaves unset is at the default problem.json states (rosenbrock's -scale 1)
    rosen = PROBLEMS["rosenbrock"].problem
    assert published_as(rosen, ["-n", "20", "-alpha", "80", "-scale", "1"]) == "case 'n20' (-n 20 -alpha 80)"
    assert published_as(rosen, ["-n", "20", "-alpha", "80", "-scale", "1.5"]) is None
    assert all(not PROBLEMS[p].problem.performance.params for p in PUBLIC)
    for pid in DRAWN:
        prob = PROBLEMS[pid].problem
        assert prob.performance is not None and prob.performance.params, f"{pid}: its performance case is public"
        seen = set()
        for seed in range(60):
            drawn = draw_performance(prob, seed)
            assert drawn == draw_performance(prob, seed), "the same seed draws the same"
            args = performance_args(prob, drawn)
            assert published_as(prob, args) is None, (pid, seed, args)
            assert args not in [c.args for c in prob.cases] and args != prob.performance.args
            got = option_values(args)
            for p in prob.performance.params:
                v = float(got[p.option])
                assert p.min <= (abs(v) if p.either_sign else v) <= p.max, (pid, p.option, v)
            seen.add(tuple(drawn))
        assert len(seen) >= 5, f"{pid}: 60 seeds drew only {len(seen)} different cases"


def test_a_draw_replaces_the_option_or_appends_it_and_bad_params_are_refused():
    assert with_drawn(["-n", "20", "-alpha", "80"], ["-alpha", "93.3"]) == ["-n", "20", "-alpha", "93.3"]
    assert with_drawn(["-n", "64"], ["-re", "300"]) == ["-n", "64", "-re", "300"]  # a site's args without it
    assert with_drawn(["-a", "-0.5"], ["-a", "-1.1"]) == ["-a", "-1.1"]  # a negative number is a value
    # the nominal case names every drawn option (so a draw repeating it can be told)
    with pytest.raises(ValueError, match="-alpha not in args"):
        Performance(args=["-n", "20"], params=[{"option": "-alpha", "kind": "real", "min": 1, "max": 2}])
    # ranges that can only give a published case are the author's error, named
    prob = PROBLEMS["robertson"].problem
    stuck = prob.model_copy(update={"performance": prob.performance.model_copy(update={"params": [
        p.model_copy(update={"min": 4e10, "max": 4e10}) for p in prob.performance.params]})})
    with pytest.raises(ConfigError, match="performance.params"):
        draw_performance(stuck, 1)



def test_a_damaged_performance_draw_is_named_not_used(tmp_path):
    (tmp_path / "snapshot").mkdir()
    for bad in ('{"x": "ab"}', '{"x": ["-a"]}', '[]'):
        (tmp_path / "snapshot" / "held_out.json").write_text(f'{{"seed": 1, "problems": {{}}, "performance": {bad}}}')
        with pytest.raises(HpcbenchError, match="held_out.json: unreadable"):
            read_performance_draw(tmp_path)
    (tmp_path / "snapshot" / "held_out.json").write_text('{"seed": 1, "problems": {}}')  # planned before the draw
    assert read_performance_draw(tmp_path) == {}


def _plan(root: Path, seed: int | None, site=None):
    site = site or load_site("local")
    request = PlanRequest({p: PROBLEMS[p] for p in DRAWN},
                          [reference_submission(PROBLEMS[p].folder, p) for p in DRAWN])
    _, plan = create_campaign(root, site, request, FULL.with_seed(seed))
    return {j.problem: j.perf for j in plan.jobs if j.perf is not None}


def test_planning_draws_the_case_per_campaign_and_a_replan_keeps_it(tmp_path):
    """Through planning (create_campaign, the full profile): two campaigns with different
    seeds time every problem at different arguments, neither at a published case; the
    reference is timed at the same arguments; planning the campaign again keeps its draw,
    recorded in the snapshot."""
    # seeds 1 and 2 differ for every problem (each draws a real of 4-5 significant digits)
    one, two = _plan(tmp_path / "a", 1), _plan(tmp_path / "b", 2)
    assert set(one) == set(two) == set(DRAWN), sorted(one)
    for pid, perf in one.items():
        prob = PROBLEMS[pid].problem
        args = [r.args for r in perf.runs]
        assert args == [r.args for r in perf.reference_runs], "the reference runs the same case"
        assert args != [r.args for r in two[pid].runs], f"{pid}: two seeds drew the same case"
        for a in (args[0], two[pid].runs[0].args):
            assert published_as(prob, a) is None, (pid, a)
        assert read_performance_draw(tmp_path / "a")[pid] == draw_performance(prob, 1)
    again = _plan(tmp_path / "a", None)  # a resume: the recorded draw, not a new one
    assert {p: [r.args for r in x.runs] for p, x in again.items()} == \
           {p: [r.args for r in x.runs] for p, x in one.items()}
    with pytest.raises(HpcbenchError, match="seed 1"):
        _plan(tmp_path / "a", 2)
    # a site's bigger case gets the draw too
    site = load_site("local")
    big = site.model_copy(update={"performance_args": {"darcy-dmplex": ["-n", "320"]}})
    got = _plan(tmp_path / "c", 1, big)["darcy-dmplex"].runs[0].args
    assert got == ["-n", "320", *draw_performance(PROBLEMS["darcy-dmplex"].problem, 1)]
    # one that, with the draw, would be a published case (darcy's low-n16 is -n 16 at any -kin
    # it leaves at its default: the safe side) is refused, naming the site's field
    public = site.model_copy(update={"performance_args": {"darcy-dmplex": ["-n", "16"]}})
    with pytest.raises(ConfigError, match="performance_args.darcy-dmplex"):
        _plan(tmp_path / "d", 1, public)


def test_the_nominal_answer_printed_at_a_drawn_case_scores_no_performance():
    """execution_time's check of the timed answers, at a drawn case: robertson's compare check
    names the published cases and @held_out, and applies to the performance case all the same;
    the answer at the old public -tfinal 4e10, printed where the reference ran the drawn 6.1e10
    (its real output there), fails it, and the right answer passes (figures: the reference)."""
    from hpcbench.evaluators.metrics.execution_time import ExecutionTime
    from tests.test_perf_metric import BUNDLE, ctx, run

    nominal = "y_final: 5.2082464328e-08 2.0832986803e-13 9.9999994792e-01\n"
    drawn = "y_final: 3.4152050990e-08 1.3660820857e-13 9.9999996585e-01\n"
    assert any(isinstance(c, CompareCheck) and "@held_out" in c.cases for c in BUNDLE.checks.checks)

    def rec(mine: str) -> JobResult:
        runs = [x for i in range(5)
                for x in (run("perf", i, 0.01, stdout=mine), run("perf_ref", i, 0.12, stdout=drawn))]
        return JobResult(job_id="j", agent="a", problem="robertson", attempt="1", runs=runs)

    cheat = ExecutionTime().evaluate(ctx(rec(nominal)))
    assert cheat.score == 0.0 and "answers differ" in cheat.rationale, cheat.rationale
    honest = ExecutionTime().evaluate(ctx(rec(drawn)))
    assert honest.score == 1.0, honest.rationale


# The performance case's answers as the programs print them (PETSc 3.26.1, 2026-12-07; bench/
# perf_tolerance.py measures them over several draws): the reference at the draw of `seed`, a
# valid program there (the one whose answers come nearest the problem's factor in that bench:
# advection1d's more-digits, bratu-fold's fold-to-1e-8) and the reference at the nominal, public
# arguments, which a program could print without solving.
AT_A_DRAW = {
    "advection1d": (0, ["-a", "-0.9813"], {
        "reference": "mass: 1.7724342737e-01\nl2_norm: 4.2441842115e-01\nmax_value: 7.9101670060e-01\n"
                     "moment: 1.3147536471e-02\nu_quarters: 7.8079659719e-01 2.5978604025e-02 -8.6472363665e-03\n",
        "valid": "mass: 1.7724342737123280e-01\nl2_norm: 4.2441842114830292e-01\nmax_value: 7.9101670060119544e-01\n"
                 "moment: 1.3147536471070788e-02\n"
                 "u_quarters: 7.8079659719480421e-01 2.5978604024579365e-02 -8.6472363664501627e-03\n",
        "nominal": "mass: 1.7724342737e-01\nl2_norm: 4.2441841788e-01\nmax_value: 7.9101669281e-01\n"
                   "moment: 1.3639229630e-02\nu_quarters: 7.7662280620e-01 1.0584656073e-02 8.7802970952e-03\n"}),
    "bratu-fold": (0, ["-n", "42", "-ky", "0.8115"], {
        "reference": "lambda_fold: 3.6189128682e+00\numax: 1.1858534483e+00\nunorm: 8.7486418711e-01\n",
        "valid": "lambda_fold: 3.6189128160e+00\numax: 1.1858533176e+00\nunorm: 8.7486410126e-01\n",
        "nominal": "lambda_fold: 4.2643995434e+00\numax: 1.1801625680e+00\nunorm: 8.7512520444e-01\n"}),
}


@pytest.mark.parametrize("pid", sorted(AT_A_DRAW))
def test_the_nominal_answer_fails_at_a_draw_at_the_problems_factor_where_valid_answers_pass(pid):
    """The hole found at the last stop (docs/security.md): at the old factor of 100 the nominal
    case's answers passed the performance check at a drawn case on advection1d and bratu-fold.
    At each problem's own performance.tolerance_factor they fail, and the reference's and a
    valid program's answers at the draw pass (recorded figures: no PETSc run, well under 0.1 s)."""
    b = PROBLEMS[pid]
    seed, drawn, out = AT_A_DRAW[pid]
    assert draw_performance(b.problem, seed) == drawn, "the figures' draw changed: re-measure"

    def score(mine: str, factor: float | None = None) -> float | None:
        runs = [x for i in range(3)
                for x in (run("perf", i, 0.4, stdout=mine), run("perf_ref", i, 0.4, stdout=out["reference"]))]
        problem = b.problem
        if factor is not None:
            assert problem.performance is not None
            problem = problem.model_copy(update={"performance": problem.performance.model_copy(
                update={"tolerance_factor": factor})})
        sub = Submission(problem=pid, agent="a", attempt="1", entry="main.c", files=["main.c"])
        return ExecutionTime().evaluate(EvalContext(problem=problem, checks=b.checks, submission=sub, sources={},
                                                    record=JobResult(job_id="j", agent="a", problem=pid,
                                                                     attempt="1", runs=runs))).score

    # the hole at the old factor of 100: advection1d's nominal answers still lie inside 100x the
    # checks' tolerances at its draws (about 24x); bratu-fold's no longer do, since -ky moves the fold
    assert score(out["nominal"], 100.0) == (1.0 if pid == "advection1d" else 0.0)
    assert score(out["nominal"]) == 0.0
    assert score(out["reference"]) == 1.0 and score(out["valid"]) == 1.0


def _solved(run) -> bool:
    return run.log_view is not None and any(e.name == "TSSolve" for e in run.log_view.events)


# Trick (outside red team, issue 33), as edits of the robertson reference (so it follows it):
# a table of the answers at every public -tfinal, the published cases' (40, 4e4) and the
# performance case's as problem.json published it before its arguments were drawn (4e10).
# Seeing one of them it prints the known answer without integrating; anywhere else it
# integrates, as the reference does. The answer is right, so comparing the timed runs' answers
# with the reference's never caught it.
KNOWN_ANSWERS = Program(name="known-answers", reason="prints the known answer at a public -tfinal", edits=[
    Edit(find="#include <petscts.h>\n", replace="""#include <petscts.h>

/* y(T) at the public final times, as the reference prints them */
static const struct {
  PetscReal   t;
  const char *y;
} known[] = {
  {40.0, "7.1582706738e-01 9.1855347293e-06 2.8416374708e-01"},
  {4e4, "3.8983376329e-02 1.6217682847e-07 9.6101646149e-01"},
  {4e10, "5.2082464328e-08 2.0832986803e-13 9.9999994792e-01"},
};
"""),
    Edit(find="  PetscOptionsEnd();\n", replace="""  PetscOptionsEnd();
  for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++) {
    if (tfinal == known[k].t) { /* a public case: its answer is known */
      PetscCall(PetscPrintf(PETSC_COMM_WORLD, "y_final: %s\\n", known[k].y));
      PetscCall(PetscFinalize());
      return 0;
    }
  }
"""),
])


@pytest.mark.slow
def test_a_program_that_knows_the_public_cases_does_the_work_in_the_drawn_one(tmp_path):
    """KNOWN_ANSWERS: the reference's integrator, except
    that at a public -tfinal (the published cases' 40 and 4e4, and 4e10, the performance case
    problem.json published before it was drawn) it prints the known answer without solving, as
    the outside red team's program did (execution time 1.00 at 0.17x the reference's time). In
    the campaign it meets public values only in the published cases (where it takes the
    shortcut: its runs there have no TSSolve and take a small part of a solve's time); its
    performance case is drawn, so there it integrates, and its time is the reference's: no
    better than its control, the reference, timed beside it at the same drawn arguments.
    `hpcbench explain C /held_out` shows the draw after the campaign."""
    tree = tmp_path / "tree"
    d = tree / "known-answers" / "robertson" / "1"
    d.mkdir(parents=True)
    trick = apply_edits(PROBLEMS["robertson"], "performance", KNOWN_ANSWERS, "known-answers")
    (d / "main.c").write_text(trick["main.c"])
    (d / "submission.json").write_text(json.dumps({"problem": "robertson", "agent": "known-answers", "attempt": "1",
                                                   "entry": "main.c", "files": ["main.c"]}))
    timed = profile_file("quick-timed", performance="timed")
    out = tmp_path / "c"
    hpcbench("run", "--profile", str(timed), "--submissions", str(tree), "--problems", "robertson",
             "--held-out-seed", "5", "--out", str(out))
    prob = PROBLEMS["robertson"].problem
    drawn = read_performance_draw(out)["robertson"]
    assert drawn == draw_performance(prob, 5)
    recs = {p.stem.split("__")[0]: JobResult.model_validate_json(p.read_bytes())
            for p in (out / "records").glob("*__robertson__1.json")}
    adv, ref = recs["known-answers"], recs["reference"]
    public = [r for r in adv.runs if r.case in ("t40", "t4e4") and r.log_view is not None]
    assert public and not any(_solved(r) for r in public), "the trick fires at the public arguments"
    perf = [r for r in adv.runs if r.case == "perf" and r.kind == "perf"]
    theirs = [r for r in adv.runs if r.case == "perf" and r.kind == "perf_ref"]
    assert perf and theirs
    # what the shortcut is worth: a run of a public case takes a small part of a solve's time
    # (the performance runs record PETSc's total time, not its events)
    solve_s = statistics.median(r.log_view.total_time_s for r in theirs if r.log_view and r.log_view.total_time_s)
    assert max(r.log_view.total_time_s or 0.0 for r in public) < 0.2 * solve_s, (public, solve_s)
    args = performance_args(prob, drawn)
    assert args != prob.performance.args
    for r in perf + theirs:  # both sides ran the drawn case
        assert any(r.command[i:i + len(args)] == args for i in range(len(r.command))), r.command
    assert "perf_same_program" in ref.extra  # the reference's own job: timed once, the same draw
    rows = {r["agent"]: r for r in json.loads(hpcbench("report", str(out), "--format", "json").stdout)["submissions"]}
    mine = rows["known-answers"]["evaluators"]["execution_time"]
    control = rows["reference"]["evaluators"]["execution_time"]
    assert mine["status"] == "scored" and "answers differ" not in mine["rationale"], mine
    got = re.search(r"([0-9.]+) x the reference's time", mine["rationale"])
    assert got, mine
    # with the case public its runs took 0.01x the reference's time; doing the work, about 1x
    assert float(got.group(1)) > 0.5, mine
    # both about the reference's time, timed against robertson's par in their own jobs: the trick
    # gains nothing beyond the two jobs' noise
    assert mine["score"] <= control["score"] + 0.1, (mine, control)
    shown = hpcbench("explain", str(out), "/held_out").stdout
    assert json.dumps(drawn) in shown.replace("\n", ""), shown
