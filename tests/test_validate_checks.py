"""Mutation testing of the hidden checks (`hpcbench validate-checks`) and the accuracy rules it
relies on: wrong programs must score below 0.5, valid variants must pass every check.

The end-to-end test runs a representative subset of the libraries through the real pipeline
(real builds, MPI runs, collect, scoring); the full libraries run with
`hpcbench validate-checks` (bench/validate_checks.py), too slow for CI on two cores."""

from __future__ import annotations

import json
import os
import shutil
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from hpcbench.errors import ConfigError
from hpcbench.evaluators.base import EvalContext
from hpcbench.evaluators.metrics.numerical_accuracy import NumericalAccuracy
from hpcbench.jobs.records import JobResult, RunResult
from hpcbench.pipeline.starved import starved_at_limit
from hpcbench.problem import Checks, load_problem, load_problems
from hpcbench.site import load_site
from hpcbench.submission import Submission
from hpcbench.validation import checks as vc
from hpcbench.validation import markdown, summary
from hpcbench.validation.library import apply_edits, load_library
from hpcbench.validation.report import Outcome, ProblemReport

PROBLEMS = load_problems()
CPU = ["advection1d", "allen-cahn-imex", "bratu-fold", "cavity-dmstag", "darcy-dmplex", "elasticity-gamg",
       "obstacle-vi", "poisson3d-mg", "robertson", "rosenbrock", "stokes-fieldsplit", "vec-scatter"]


# ----------------------------------------------------------------------------- the libraries


@pytest.mark.parametrize("pid", CPU)
def test_every_cpu_problem_brings_mutants_and_variants_that_apply(pid):
    lib = load_library(PROBLEMS[pid], "checks")
    assert lib is not None, f"{pid} has no mutants/mutants.json"
    assert len(lib.wrong) >= 5 and len(lib.valid) >= 3
    ref = (PROBLEMS[pid].reference_dir / "main.c").read_text()
    for kind in ("wrong", "valid"):
        for i, prog in enumerate(getattr(lib, kind)):
            files = apply_edits(PROBLEMS[pid], "checks", prog, f"{kind}[{i}]")  # every find occurs exactly once
            if kind == "wrong":
                assert files["main.c"] != ref or prog.args, f"{pid}/{prog.name} changes nothing"


def test_every_performance_librarys_programs_set_only_options_a_submission_may(tmp_path):
    """Before: a perf.json program whose args a submission may not set (cavity-dmstag's
    `-dm_preallocate_only`, stop 45) was rejected at planning and left out of
    validate-performance's report without a word; now it is a ConfigError naming the file, as
    in validate-checks (validation/performance.py loads with check_args)."""
    from hpcbench.validation.campaigns import load_programs
    from hpcbench.validation.library import ALL_KINDS, agent_of, write_programs

    libs = write_programs(PROBLEMS, "performance", tmp_path, None)
    assert set(libs) >= set(CPU)
    for pid, lib in libs.items():
        for kind in ALL_KINDS["performance"]:
            load_programs(tmp_path / agent_of(kind) / pid, [p.name for p in getattr(lib, kind)], agent_of(kind),
                          PROBLEMS[pid], check_args=True)
    bad = tmp_path / "faster" / "cavity-dmstag" / "preallocate-only"
    sub = json.loads((bad / "submission.json").read_text())
    (bad / "submission.json").write_text(json.dumps({**sub, "args": ["-dm_preallocate_only"]}))
    with pytest.raises(ConfigError, match="dm_preallocate_only"):
        load_programs(bad.parent, [bad.name], "faster", PROBLEMS["cavity-dmstag"], check_args=True)


def _copy_problem(tmp_path: Path, pid: str, lib: dict) -> Path:
    folder = tmp_path / pid
    shutil.copytree(PROBLEMS[pid].folder, folder)
    (folder / "mutants" / "mutants.json").write_text(json.dumps(lib))
    return folder


def test_an_edit_that_no_longer_applies_names_file_field_and_reason(tmp_path):
    bad = {"wrong": [{"name": "gone", "reason": "a line the reference lost",
                      "edits": [{"find": "no such line in the reference", "replace": ""}]}],
           "valid": [{"name": "reference", "reason": "the reference as it is"}]}
    b = load_problem(_copy_problem(tmp_path, "vec-scatter", bad))
    lib = load_library(b, "checks")
    with pytest.raises(ConfigError) as e:
        apply_edits(b, "checks", lib.wrong[0], "wrong[0]")
    assert "mutants.json" in str(e.value) and "wrong[0].edits[0].find" in str(e.value)
    assert "occurs 0 times" in str(e.value)
    twice = {"wrong": [{"name": "twice", "reason": "ambiguous edit of a repeated line",
                        "edits": [{"find": "PetscCall(", "replace": "PetscCall("}]}],
             "valid": [{"name": "reference", "reason": "the reference as it is"}]}
    b = load_problem(_copy_problem(tmp_path / "2", "vec-scatter", twice))
    with pytest.raises(ConfigError, match="must be exactly once"):
        apply_edits(b, "checks", load_library(b, "checks").wrong[0], "wrong[0]")


def test_a_library_without_reasons_or_with_a_repeated_name_is_refused(tmp_path):
    no_reason = {"wrong": [{"name": "x", "reason": ""}], "valid": [{"name": "y", "reason": "the reference"}]}
    with pytest.raises(ConfigError, match=r"wrong\.0\.reason"):
        load_library(load_problem(_copy_problem(tmp_path, "vec-scatter", no_reason)), "checks")
    dup = {"wrong": [{"name": "x", "reason": "one wrong program"}],
           "valid": [{"name": "x", "reason": "the same name again"}]}
    with pytest.raises(ConfigError, match=r"valid\[0\]\.name.*used twice"):
        load_library(load_problem(_copy_problem(tmp_path / "2", "vec-scatter", dup)), "checks")


PYTHON = ["poisson3d-mg", "robertson", "rosenbrock", "vec-scatter"]  # the problems with a Python reference


def test_every_python_reference_brings_a_python_library_whose_programs_load_as_python_submissions(tmp_path):
    """mutants-python.json (issue 38): edits of reference-python/main.py that apply, written as
    Python submission trees (their own folder, out/python) that load with the problem's rules.
    No PETSc: `hpcbench validate-checks --language python` runs them (docs/problems.md)."""
    from hpcbench.validation.campaigns import load_programs
    from hpcbench.validation.library import write_programs

    libs = write_programs({p: PROBLEMS[p] for p in PYTHON}, "checks", tmp_path, language="python")
    assert sorted(libs) == PYTHON
    for pid, lib in libs.items():
        assert len(lib.wrong) >= 5 and len(lib.valid) >= 2, pid
        ref = (PROBLEMS[pid].folder / "reference-python" / "main.py").read_text()
        for kind in ("wrong", "valid"):
            subs = load_programs(tmp_path / kind / pid, [p.name for p in getattr(lib, kind)], kind, PROBLEMS[pid],
                                 check_args=True)
            assert {s.meta.entry for s in subs} == {"main.py"}
            for prog in getattr(lib, kind):
                if kind == "wrong":
                    changed = (tmp_path / kind / pid / prog.name / "main.py").read_text() != ref
                    assert changed or prog.args, f"{pid}/{prog.name} changes nothing"
    # the C library is another measurement: its file and its default language stay as they were
    assert load_library(PROBLEMS["rosenbrock"], "checks").wrong[0].name == "ignores-n"
    py = ProblemReport("rosenbrock", outcomes=[Outcome("wrong", "ignores-n", "-n is never read", 0.1)],
                       language="python")
    assert summary([py]).startswith("rosenbrock (python): kill rate 100% (1/1)")
    assert "### rosenbrock (python)" in markdown([py])


def test_a_python_library_without_python_or_a_python_reference_or_with_a_c_edit_is_refused(tmp_path):
    lib = {"wrong": [{"name": "ignores-n", "reason": "-n is never read", "edits": [{"find": "x", "replace": "y"}]}],
           "valid": [{"name": "reference", "reason": "the reference as it is"}]}

    def problem_with(pid: str, where: Path) -> Path:
        folder = _copy_problem(where, pid, json.loads((PROBLEMS[pid].folder / "mutants/mutants.json").read_text()))
        (folder / "mutants" / "mutants-python.json").write_text(json.dumps(lib))
        return folder

    c_only = next(p for p in CPU if "python" not in PROBLEMS[p].problem.languages)
    with pytest.raises(ConfigError, match=r"mutants-python\.json.*languages.*does not list python"):
        load_library(load_problem(problem_with(c_only, tmp_path / "1")), "checks", "python")
    folder = problem_with("vec-scatter", tmp_path / "2")
    shutil.rmtree(folder / "reference-python")
    with pytest.raises(ConfigError, match=r"mutants-python\.json.*no Python reference"):
        load_library(load_problem(folder), "checks", "python")
    lib["wrong"][0]["edits"][0].update(file="main.c", find="PetscCall(")
    b = load_problem(problem_with("vec-scatter", tmp_path / "3"))
    with pytest.raises(ConfigError, match=r"mutants-python\.json.*wrong\[0\]\.edits\[0\]\.file.*'main\.c' is not a "
                                          r"file of reference-python/"):
        apply_edits(b, "checks", load_library(b, "checks", "python").wrong[0], "wrong[0]", "python")
    # generated mutants are edits of C: none with the Python library, said before anything runs
    with pytest.raises(ConfigError, match="--generated"):
        vc.validate_checks(["vec-scatter"], tmp_path / "vc", vc.Options(language="python"))
    res = CliRunner().invoke(__import__("hpcbench.cli", fromlist=["main"]).main,
                             ["validate-checks", "--language", "python", "--generated", "5", "--out", str(tmp_path)])
    assert res.exit_code != 0 and "--generated" in res.output


def test_rates_verdicts_and_the_summary_name_each_survivor_and_rejected_variant():
    r = ProblemReport("p", "checks", [
        Outcome("wrong", "killed-by-score", "wrong coefficient", 0.2),
        Outcome("wrong", "killed-by-gate", "crashes", None, failed_gate="execution"),
        Outcome("wrong", "survivor", "an option ignored", 0.7),
        Outcome("wrong", "broken", "does not compile", None, failed_gate="compilation", why="syntax error"),
        Outcome("valid", "fine", "another solver", 1.0),
        # a valid variant must pass every check (it must be able to earn a tier): 0.99 is rejected
        Outcome("valid", "punished", "a correct program", 0.99, why="entry 3 off"),
    ])
    assert r.kill_rate == pytest.approx(2 / 4) and r.acceptance_rate == pytest.approx(1 / 2)
    assert not r.meets_targets
    text = summary([r])
    assert "kill rate 50% (2/4)" in text and "acceptance 50% (1/2)" in text and "BELOW TARGET" in text
    assert "survivor survivor (accuracy 0.700): an option ignored" in text
    assert "rejected variant punished (accuracy 0.990)" in text and "entry 3 off" in text
    assert "BROKEN mutant broken" in text
    md = markdown([r])
    assert md.count("\n| ") == 7  # header + one line per program
    assert "| survivor | wrong | 0.700 | SURVIVES | an option ignored |" in md
    ok = ProblemReport("q", "checks", [Outcome("wrong", f"w{i}", "wrong program", 0.1) for i in range(20)]
                          + [Outcome("valid", "v", "valid program", 1.0)])
    assert ok.meets_targets
    ok.outcomes.append(Outcome("wrong", "w20", "one survivor in 21", 0.6))
    assert ok.kill_rate == pytest.approx(20 / 21) and ok.meets_targets  # 95.2% >= 95%


def test_validate_performance_second_side_a_faster_program_must_outscore_every_much_slower_one():
    """validate-performance with a par: slower/as-fast told apart by their ratio to the reference in
    the same rounds (vs_reference, on the thresholds), not by their score against par; a faster
    program is ahead only above every program 1.5x or more slower than it."""
    r = ProblemReport("p", "performance", [
        Outcome("slower", "slow", "needless work", 0.45, ratio=5.0, vs_reference=0.6),
        Outcome("as_fast", "same", "another good solver", 0.70, ratio=2.05, vs_reference=1.0),
        Outcome("faster", "quick", "a better method", 0.93, ratio=1.15),
        Outcome("faster", "tied", "near the reference's time, scored as much", 0.60, ratio=1.3),
        Outcome("par", "par", "the par", 1.0, ratio=1.0),
    ], reference_score=0.71, reference_ratio=2.0, against_par=True)
    r.decide()
    by = {o.name: o for o in r.outcomes}
    assert by["slow"].killed and by["same"].accepted and by["par"].accepted
    near = Outcome("slower", "near", "1.3x the reference: inside the thresholds' band", 0.65, ratio=2.6,
                   vs_reference=0.99)
    r.outcomes.append(near)
    r.decide()
    assert near.killed  # 0.65 against par, below the reference's 0.71
    r.outcomes.remove(near)
    # 'same' took 2.05 / 1.3 = 1.58x tied's time and scored 0.70, above tied's 0.60: behind
    assert by["quick"].accepted and not by["tied"].accepted and not r.meets_targets
    assert "same is 1.58x slower" in by["tied"].behind
    assert "faster ahead 1/2" in summary([r]) and "behind tied" in summary([r])
    by["tied"].score = 0.75
    r.decide()
    assert by["tied"].accepted and r.meets_targets


# ----------------------------------------------------------------------------- accuracy rules


def _record(values: dict[tuple[str, int], str]) -> JobResult:
    runs = [RunResult(case=c, ranks=r, kind="instrumented", repeat=0, variant="cpu", command=[], exit_code=0,
                      wall_s=0.1, stdout=out) for (c, r), out in values.items()]
    return JobResult(job_id="j", agent="a", problem="p", attempt="1", runs=runs)


def _score(checks: dict, mine: dict, ref: dict | None = None) -> float:
    bundle = PROBLEMS["cavity-dmstag"]
    ctx = EvalContext(problem=bundle.problem, checks=Checks.model_validate(checks),
                      submission=Submission(problem="cavity-dmstag", agent="a", entry="main.c", files=["main.c"]),
                      sources={},
                      record=_record(mine), reference=_record(ref or {}))
    return NumericalAccuracy().evaluate(ctx).score


def test_refinement_fails_when_nothing_changes_under_refinement():
    """The old rule d1 >= 1.5 d2 held for d1 = d2 = 0: a program ignoring -n passed."""
    chk = {"checks": [{"kind": "refinement", "name": "r", "quantity": "kinetic_energy",
                       "cases": ["re100-n8", "re100-n16", "re100-n32"], "min_ratio": 1.5}]}
    same = {(c, 1): "kinetic_energy: 0.0165657" for c in ("re100-n8", "re100-n16", "re100-n32")}
    assert _score(chk, same) == 0.0
    converging = {("re100-n8", 1): "kinetic_energy: 0.0128125", ("re100-n16", 1): "kinetic_energy: 0.0165657",
                  ("re100-n32", 1): "kinetic_energy: 0.0181937"}
    assert _score(chk, converging) == 1.0
    diverging = {("re100-n8", 1): "kinetic_energy: 0.01", ("re100-n16", 1): "kinetic_energy: 0.02",
                 ("re100-n32", 1): "kinetic_energy: 0.04"}
    assert _score(chk, diverging) == 0.0


def test_a_case_counts_at_its_worst_rank_count():
    """Right on 1 rank and wrong on 2 used to earn half the credit of each check; a program
    must give the right answer at every rank count."""
    chk = {"checks": [{"kind": "compare", "quantity": "kinetic_energy", "reference": {"source": "reference_run"},
                       "rtol": 1e-4, "fail_factor": 10}]}
    ref = {("re100-n16", 1): "kinetic_energy: 1.0", ("re1-n16", 1): "kinetic_energy: 2.0"}
    # 5.5 tolerances off at 2 ranks: 0.5 for that case (not failed outright: that caps, below)
    mine = {("re100-n16", 1): "kinetic_energy: 1.0", ("re100-n16", 2): "kinetic_energy: 1.00055",
            ("re1-n16", 1): "kinetic_energy: 2.0", ("re1-n16", 2): "kinetic_energy: 2.0"}
    assert _score(chk, mine, ref) == pytest.approx(0.75)  # one case right, one half wrong at 2 ranks


def test_one_required_output_failed_outright_caps_the_accuracy_below_the_kill_line():
    """Nine quantities right and one far off kept 0.9 (an outside hidden set: an l2 norm without
    its sqrt(h) factor kept 0.85): a check failed outright anywhere caps the score."""
    from hpcbench.evaluators.metrics.numerical_accuracy import FAILED_CAP
    from hpcbench.validation.report import KILL_BELOW

    assert FAILED_CAP < KILL_BELOW
    right = [{"kind": "compare", "quantity": f"q{i}", "reference": {"source": "reference_run"},
              "rtol": 1e-6, "fail_factor": 10} for i in range(9)]
    chk = {"checks": [*right, {"kind": "compare", "quantity": "l2", "reference": {"source": "reference_run"},
                               "rtol": 1e-6, "fail_factor": 10}]}
    good = {("re100-n16", 1): "\n".join(f"q{i}: 1.0" for i in range(9))}
    ref = {k: v + "\nl2: 1.0" for k, v in good.items()}
    assert _score(chk, ref, ref) == 1.0
    assert _score(chk, {k: v + "\nl2: 1.000005" for k, v in good.items()}, ref) == pytest.approx(0.1 * 5 / 9 + 0.9)
    assert _score(chk, {k: v + "\nl2: 130.0" for k, v in good.items()}, ref) == FAILED_CAP  # was 0.9
    assert _score(chk, good, ref) == FAILED_CAP  # l2 not printed at all
    bound = {"kind": "sanity", "name": "krylov-bound", "quantity": "its", "test": "max_abs_below", "target": 25}
    over = {k: v + "\nits: 31" for k, v in good.items()}
    assert _score({"checks": [*right, bound]}, over, ref) == FAILED_CAP  # a stated bound broken


def test_parallel_runs_each_problems_library_and_generated_mutants_as_tasks_longest_first(monkeypatch):
    monkeypatch.setattr(vc, "MEASURED_CORE_S", {("a", "library"): 50.0, ("a", "generated"): 400.0,
                                                ("b", "library"): 300.0, ("b", "generated"): 20.0})
    got = [(pid, part) for pid, part, _ in vc._parts(["a", "b", "new"], vc.Options())]
    # a problem nobody measured goes first: its cost is unknown, so it must not start last
    assert got == [("new", "library"), ("new", "generated"), ("a", "generated"), ("b", "library"),
                   ("a", "library"), ("b", "generated")]
    opts = {(pid, part): o for pid, part, o in vc._parts(["a"], vc.Options())}
    assert opts[("a", "library")].generated == 0 and opts[("a", "library")].library
    assert not opts[("a", "generated")].library and opts[("a", "generated")].generated == vc.Options().generated
    assert [p for _, p, _ in vc._parts(["a"], vc.Options(generated=0))] == ["library"]


def test_a_problems_two_tasks_merge_into_one_report():
    lib = ProblemReport("p", outcomes=[Outcome(kind="wrong", name="w", reason="r", score=0.1)])
    gen = ProblemReport("p", generated=vc.GeneratedReport(10, {}, []), error="the reference failed (generated)")
    both = vc._merged({"generated": gen, "library": lib})
    assert both.outcomes == lib.outcomes and both.generated is gen.generated
    assert both.error == "the reference failed (generated)"
    # the generated task found no mutant to run (validate-checks --only naming library programs)
    alone = vc._merged({"generated": ProblemReport("p"), "library": lib})
    assert alone.outcomes == lib.outcomes and alone.generated is None
    same = {"library": ProblemReport("p", error="x"), "generated": ProblemReport("p", error="x")}
    assert vc._merged(same).error == "x"
    assert vc._merged({"generated": gen}).generated is gen.generated


def test_writing_a_library_twice_leaves_every_file_alone(tmp_path):
    from hpcbench.validation.library import write_programs

    bundles = {"vec-scatter": load_problems()["vec-scatter"]}
    write_programs(bundles, "checks", tmp_path)
    files = sorted(p for p in tmp_path.rglob("*") if p.is_file())
    before = {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in files}
    write_programs(bundles, "checks", tmp_path)  # what each parallel task does again, beside the others
    assert files and {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in files} == before


# ----------------------------------------------------------------------------- end to end


SUBSET = {
    # the "done when": a Newton-type, a quasi-Newton and a trust-region Tao method
    # each score >= 0.95 on rosenbrock; the wrong advection direction < 0.5
    "rosenbrock": ["newton-ls", "lmvm", "newton-trust-region", "local-minimum"],
    "advection1d": ["wrong-direction", "rank-local-moment", "rk2"],
    "vec-scatter": ["local-index", "vec-create-mpi"],
}


@pytest.mark.petsc
def test_validate_checks_runs_a_subset_through_the_real_pipeline(tmp_path):
    only = {n for names in SUBSET.values() for n in names}
    # two problems at once, each in a process of its own, their runs sharing one set of core slots
    reports = vc.validate_checks(sorted(SUBSET), tmp_path / "vc", vc.Options(only=frozenset(only), parallel=2))
    by = {r.problem: r for r in reports}
    assert set(by) == set(SUBSET)
    for pid, r in by.items():
        assert not r.error, f"{pid}: {r.error}"
        assert {o.name for o in r.outcomes} == set(SUBSET[pid])
        for o in r.outcomes:
            if o.kind == "wrong":
                assert o.killed, f"{pid}/{o.name} survives ({o.score}): {o.reason}"
            else:
                assert o.accepted, f"{pid}/{o.name} rejected ({o.score}): {o.why}"
    adv = {o.name: o for o in by["advection1d"].outcomes}
    assert adv["wrong-direction"].score is not None and adv["wrong-direction"].score < 0.5
    # the library's screen (every case at one rank count) decides the wrong direction, which is
    # then not run in full; the moment summed on each rank alone is right on one rank, so the
    # screen leaves it to the full run, whose two-rank cases kill it
    assert adv["wrong-direction"].screened and not adv["rank-local-moment"].screened
    full = tmp_path / "vc/campaigns/advection1d/records"
    assert not (full / "wrong__advection1d__wrong-direction.json").exists()
    assert (full / "wrong__advection1d__rank-local-moment.json").exists()
    assert "<= " in markdown(reports) and all(o.killed for o in adv.values() if o.kind == "wrong")
    # every campaign of the validation takes the machine's core slots (its profile says so), the
    # two problems' processes too: none has slots of its own
    for pid in SUBSET:
        for kind in ("campaigns", "library-screen"):
            m = json.loads((tmp_path / "vc" / kind / pid / "campaign.json").read_text())
            assert m["profile"]["core_slots"] == "machine", (kind, pid)
    assert not list((tmp_path / "vc").glob("**/.core-slots")) and "HPCBENCH_SHARED_SLOTS" not in os.environ
    assert all(o.score == 1.0 for o in by["rosenbrock"].outcomes if o.kind == "valid")
    # The CLI on the same folder for one of the problems (the others' programs stay there):
    # nothing reruns (records are reused), the same verdicts print, the markdown table has a
    # line per program, and the exit code says the targets were met.
    md = tmp_path / "vc.md"
    res = CliRunner().invoke(__import__("hpcbench.cli", fromlist=["main"]).main,
                             ["validate-checks", "--problems", "advection1d", "--only", ",".join(SUBSET["advection1d"]),
                              "--out", str(tmp_path / "vc"), "--markdown", str(md)])
    assert res.exit_code == 0, res.output
    assert "advection1d: kill rate 100% (2/2), acceptance 100% (1/1): ok" in res.output
    # nothing ran again (a progress line, where one is shown, says so)
    assert "rosenbrock" not in res.output
    assert all("0 queued, 0 running" in ln for ln in res.output.splitlines() if "running" in ln), res.output
    assert md.read_text().count("| wrong-direction | wrong |") == 1


@pytest.mark.petsc
def test_generated_mutants_through_the_real_pipeline(tmp_path):
    """Three generated mutants of vec-scatter, picked by their edit: the default length changed
    (every case passes -n: equivalent, listed, not counted), the frequency doubled (killed, far
    below 0.5), the weighted sum's loop running one past the gathered array (killed: by the
    checks if the extra entry is not zero, else by valgrind, which confirms each probable
    equivalent); the counts, the kill rate and the tables say so."""
    from hpcbench.validation.mutation import generate as gen

    every = gen.generate(PROBLEMS["vec-scatter"], None).every

    def pick(op: str, original: str, replacement: str) -> str:
        return next(m.name for m in every if (m.operator, m.original, m.replacement) == (op, original, replacement))

    names = {"default-n": pick("crp", "30", "31"), "frequency": pick("crp", "0.3", "0.6"),
             "past-the-end": pick("ror", "i < n", "(i <= n)")}
    reports = vc.validate_checks(["vec-scatter"], tmp_path / "vc",
                                 vc.Options(only=frozenset(names.values()), library=False))
    g = reports[0].generated
    assert not reports[0].error and g is not None and g.total == len(every)
    verdicts = {o.name: o for o in g.outcomes}
    assert verdicts[names["default-n"]].verdict == "equivalent" and not verdicts[names["default-n"]].screened
    # killed at the screening case (vec-scatter's cheapest, "default"), so never run at every case
    freq = verdicts[names["frequency"]]
    assert freq.verdict == "killed" and freq.screened and "at the screening case default" in freq.why
    specs = tmp_path / "vc/generated/vec-scatter/specs"
    assert not (specs / f"generated__vec-scatter__{names['frequency']}.json").exists()
    screen_spec = json.loads((tmp_path / "vc/generated-screen/vec-scatter/specs" /
                              f"generated__vec-scatter__{names['frequency']}.json").read_text())
    assert [(r["case"], r["ranks"]) for r in screen_spec["runs"]] == [("default", 3)]
    assert verdicts[names["past-the-end"]].verdict == "killed", verdicts[names["past-the-end"]].why
    assert g.kill_rate == 1.0 and reports[0].meets_targets
    spec = json.loads((specs / f"generated__vec-scatter__{names['default-n']}.json").read_text())
    assert spec["valgrind"] is True  # the probable equivalent ran again under valgrind
    rec = json.loads((tmp_path / f"vc/generated/vec-scatter/records/generated__vec-scatter__{names['default-n']}.json"
                      ).read_text())
    again = datetime.fromisoformat(rec["started"].replace("Z", "+00:00")).timestamp()
    inst = [r for r in rec["runs"] if r["kind"] == "instrumented"]
    # ... only valgrind: the cases' runs are the first try's, kept (jobs/resume.py), not run again
    assert [r["kind"] for r in rec["runs"]].count("valgrind") == 1
    assert len(inst) == len(spec["runs"]) and all(r["started_at"] < again for r in inst), (again, inst)
    assert next(r for r in rec["runs"] if r["kind"] == "valgrind")["started_at"] >= again
    runs = {(r["case"], r["ranks"]) for r in spec["runs"]}
    # the published cases and the campaign's held-out draw, all at 3 ranks only
    assert {c for c in runs if not c[0].startswith("held-out-")} == {("default", 3), ("larger", 3)}
    assert ("held-out-1", 3) in runs and {r for _, r in runs} == {3}
    text = summary(reports)
    assert "generated mutants: kill rate 100%" in text and "equivalent (probable) 1" in text
    md = markdown(reports)
    assert f"| {names['default-n']} | equivalent |" in md and "`30` -> `31`" in md


@pytest.mark.petsc
def test_a_program_that_hangs_costs_one_case_not_every_case(tmp_path, monkeypatch):
    """validate-checks' jobs end at their first failed run (JobSpec.stop_at_failure): a failed
    run fails the execution gate whatever follows, and a wrong program that hangs cost every
    case's time limit, twice (the time-out retry): bratu-fold's picard-jacobian, 11 runs, about
    40 minutes. Here a rosenbrock that sleeps on every case (limits cut to 3 s) runs its first
    case only and is killed by the gate; it never waited for a CPU, so load cannot explain its
    time-out and it is not retried with longer limits."""
    import hpcbench.problem as problem_mod

    root = tmp_path / "problems"
    shutil.copytree(PROBLEMS["rosenbrock"].folder, root / "rosenbrock")
    prob = json.loads((root / "rosenbrock/problem.json").read_text())
    for c in prob["cases"]:
        c["time_limit_s"] = 3
    prob["held_out"]["time_limit_s"] = 3
    (root / "rosenbrock/problem.json").write_text(json.dumps(prob))
    lib = json.loads((root / "rosenbrock/mutants/mutants.json").read_text())
    init = 'PetscCall(PetscInitialize(&argc, &argv, NULL, "Chained Rosenbrock minimisation with Tao"));'
    lib["wrong"].append({"name": "sleeps", "reason": "never returns", "args": [],
                         "edits": [{"find": init, "replace": init + " PetscCall(PetscSleep(600));"}]})
    (root / "rosenbrock/mutants/mutants.json").write_text(json.dumps(lib))
    monkeypatch.setattr(problem_mod, "default_problems_dir", lambda: root)

    out = tmp_path / "vc"
    got = vc.validate_checks(["rosenbrock"], out, vc.Options(only=frozenset({"sleeps"}), generated=0, retry_starved=2))
    o = got[0].outcomes[0]
    assert o.killed and o.failed_gate == "execution" and o.screened, o.why
    # decided by the library's screen (every case at one rank count), never run in the full campaign
    records = out / "library-screen/rosenbrock/records"
    assert not (out / "campaigns/rosenbrock/specs/wrong__rosenbrock__sleeps.json").exists()
    rec = JobResult.model_validate_json((records / "wrong__rosenbrock__sleeps.json").read_text())
    assert [(r.case, r.timed_out) for r in rec.runs] == [("n6", True)]  # not n20
    assert "case n6 at 1 ranks failed" in rec.extra["stopped_at_failure"]
    spec = json.loads((out / "library-screen/rosenbrock/specs/wrong__rosenbrock__sleeps.json").read_text())
    assert spec["stop_at_failure"] and {r["time_limit_s"] for r in spec["runs"]} == {3}  # not retried
    assert not starved_at_limit(rec.runs[0]) and rec.runs[0].affinity[0].source == "proc"
    # the reference is planned the same way and, right everywhere, runs every case
    ref = JobResult.model_validate_json((records / "reference__rosenbrock__1.json").read_text())
    assert {r.case for r in ref.runs} == {"n6", "n20"} and "stopped_at_failure" not in ref.extra


def test_a_time_out_is_retried_only_where_the_run_waited_for_a_cpu():
    """The 4x retry is for correct programs that load held back past a limit meant for an idle
    machine; a run that had its CPU all along timed out on its own (a loop that never converges)."""
    from hpcbench.jobs.records import RankAffinity

    def run(ranks: int, waits: list[float], source: str = "proc") -> RunResult:
        return RunResult(case="c", ranks=ranks, kind="instrumented", command=[], exit_code=-9, timed_out=True,
                         wall_s=30.0, affinity=[RankAffinity(host="h", rank=i, cpus=str(i), cpu_wait_s=w,
                                                             source=source) for i, w in enumerate(waits)])

    assert not starved_at_limit(run(1, [0.4]))  # 1% of its 30 s waiting: its own time-out
    assert starved_at_limit(run(1, [9.0]))  # 30%: held back
    assert starved_at_limit(run(2, [0.1, 6.0]))  # one rank held back holds the other (MPI)
    assert starved_at_limit(run(2, [0.1]))  # a rank not watched: unknown counts as held back
    assert starved_at_limit(run(1, [0.0], source="probe"))  # a batch site's probe measures no wait
    # run and submit (the full profile): an unmeasured time-out is the program's (exclusive batch
    # nodes; a retry would cost a second allocation), a measured one is judged as above
    assert not starved_at_limit(run(1, [0.0], source="probe"), unmeasured=False)
    assert starved_at_limit(run(1, [9.0]), unmeasured=False)
    from hpcbench.profile import FULL, QUICK

    assert (FULL.retry_starved, FULL.retry_unmeasured) == (4.0, False) and QUICK.retry_starved == 0.0
    # A reference that still timed out names the load that held it back.
    from hpcbench.jobs.records import BuildResult, JobResult
    from hpcbench.problem import load_problems
    from hpcbench.score.reference_status import reference_problem

    b = load_problems(None, ["rosenbrock"])["rosenbrock"]
    rec = JobResult(job_id="reference__rosenbrock__1", agent="reference", problem="rosenbrock", attempt="1",
                    status="done", build=BuildResult(command="make", exit_code=0, wall_s=1.0), runs=[run(1, [12.0])])
    assert reference_problem(b.problem, b.checks, rec).endswith(
        "its ranks waited for a CPU 40% of that time: the machine was loaded")
    rec.runs = [run(1, [0.3])]
    assert "loaded" not in reference_problem(b.problem, b.checks, rec)


@pytest.mark.petsc
def test_a_rerun_measures_the_checks_and_programs_as_they_are_now(tmp_path, monkeypatch):
    """The work folder is reused, but never with stale inputs: a campaign's snapshot kept the
    checks as first planned (a loosened tolerance went unseen), and a program whose edit had
    changed got its old record back from the time-out retry bookkeeping."""
    import hpcbench.problem as problem_mod

    root = tmp_path / "problems"
    shutil.copytree(PROBLEMS["vec-scatter"].folder, root / "vec-scatter")
    monkeypatch.setattr(problem_mod, "default_problems_dir", lambda: root)
    out = tmp_path / "vc"
    only = vc.Options(only=frozenset({"not-scaled"}), generated=0)
    first = vc.validate_checks(["vec-scatter"], out, only)
    assert first[0].outcomes[0].killed and first[0].outcomes[0].score == 0.0 and first[0].outcomes[0].screened
    record = out / "library-screen/vec-scatter/records/wrong__vec-scatter__not-scaled.json"
    started = json.loads(record.read_text())["started"]

    checks = json.loads((root / "vec-scatter/checks.json").read_text())
    for c in checks["checks"]:  # tolerances so wide that leaving out the scaling passes
        c.update(rtol=10.0, atol=1e6)
    (root / "vec-scatter/checks.json").write_text(json.dumps(checks))
    second = vc.validate_checks(["vec-scatter"], out, only)
    # rescored with the checks as they are now: the screen no longer decides it, so it ran in full
    assert second[0].outcomes[0].score == 1.0 and not second[0].outcomes[0].screened
    assert json.loads(record.read_text())["started"] == started  # and its screening job was not run again

    lib = json.loads((root / "vec-scatter/mutants/mutants.json").read_text())
    prog = next(p for p in lib["wrong"] if p["name"] == "not-scaled")
    prog["edits"] = [{"find": "PetscCall(VecScale(x, alpha));", "replace": "PetscCall(VecScale(x, 2.0 * alpha));"}]
    (root / "vec-scatter/mutants/mutants.json").write_text(json.dumps(lib))
    vc.validate_checks(["vec-scatter"], out, only)
    assert json.loads(record.read_text())["started"] != started  # a changed program runs again


@pytest.mark.petsc
def test_without_malloc_debug_a_write_past_a_block_and_a_leak_are_still_caught(tmp_path):
    """validate-checks turns PETSc's whole-heap check off (-malloc_debug: most of its run time,
    _accuracy_site); the tracing allocator -malloc_dump turns on still stops a program that wrote
    one past a PetscMalloc'd block when it frees it, and still dumps a leak. Through the real
    pipeline, on a site file that says `malloc_debug: false`; the validation profiles plan it off."""
    from tests.conftest import ROOT, hpcbench

    ref = ROOT / "problems" / "rosenbrock" / "reference"
    meta = json.loads((ref / "submission.json").read_text())
    extra = {"past-end": "{ PetscReal *w; PetscCall(PetscMalloc1(4, &w)); "
                         "for (int i = 0; i <= 4; i++) w[i] = 1.0; PetscCall(PetscFree(w)); }",
             "leak": "{ PetscReal *w; PetscCall(PetscMalloc1(4, &w)); w[0] = 1.0; }"}
    for name, code in extra.items():
        d = tmp_path / "tree" / "heap" / "rosenbrock" / name
        d.mkdir(parents=True)
        src = (ref / "main.c").read_text()
        start = src.index("\n", src.index("PetscCall(PetscInitialize(")) + 1
        (d / "main.c").write_text(src[:start] + "  " + code + "\n" + src[start:])
        (d / "submission.json").write_text(json.dumps({**meta, "agent": "heap", "attempt": name}))
    site = tmp_path / "no-malloc-debug.yaml"
    text = (ROOT / "site-configs" / "local.yaml").read_text().replace("name: local", "name: no-malloc-debug")
    site.write_text(text.replace("valgrind: true", "valgrind: false\nmalloc_debug: false"))
    out = tmp_path / "c"
    hpcbench("run", "--site", str(site), "--submissions", str(tmp_path / "tree"), "--problems", "rosenbrock",
             "--out", str(out), "--held-out-seed", "1")
    runs = {name: JobResult.model_validate_json((out / "records" / f"heap__rosenbrock__{name}.json").read_text()
                                                ).runs for name in extra}
    for name, rs in runs.items():
        inst = [r for r in rs if r.kind == "instrumented"]
        assert inst and all("-malloc_debug" not in r.petsc_options and "-malloc_dump" in r.petsc_options
                            and "-options_file" in r.command for r in inst), name
    stopped = next(r for r in runs["past-end"] if r.kind == "instrumented")
    assert stopped.exit_code != 0 and "corrupted" in stopped.stderr, stopped.stderr[-2000:]
    assert all(r.exit_code == 0 for r in runs["leak"] if r.kind == "instrumented")
    assert all(r.leaks for r in runs["leak"] if r.kind == "instrumented")
    from hpcbench.profile import CHECKS_LIBRARY, GENERATED

    assert not CHECKS_LIBRARY.malloc_debug and not GENERATED.malloc_debug and load_site("local").malloc_debug


def test_the_measured_task_costs_name_only_problems_and_parts_that_exist():
    known = set(load_problems())
    assert {pid for pid, _ in vc.MEASURED_CORE_S} <= known
    assert {part for _, part in vc.MEASURED_CORE_S} <= {"library", "generated"}
    assert all(v > 0 for v in vc.MEASURED_CORE_S.values())
