"""Issue 35's done-when for programs wrong only near one end of a range: for every problem, 20
held-out seeds, the references pass at every draw (tests/test_held_out.py runs them) and the
edge-only wrong programs of the library fail at every draw.

Cheap by construction: a library entry of class "edge-only" says where in the held-out ranges it
is wrong (`wrong_where`, hpcbench/validation/library.py). That every draw of 20 seeds holds a
case there is pure planning (no run); that the program fails its checks at such a case is one
run of it beside the reference, at the first seed's case in its region, judged by the checks that
judge held-out cases. The stratified draw (hpcbench/plan/held_out.py) is what puts a case there
in every campaign; the uniform one-case draw did not (the negative control below)."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from hpcbench.evaluators.metrics.numerical_accuracy import case_factor, compare_score, sanity_score
from hpcbench.plan.held_out import draw
from hpcbench.problem import CompareCheck, ProblemBundle, SanityCheck, applies_to, load_problem, load_problems
from hpcbench.profile import CHECKS_LIBRARY, VALIDATION_SEED
from hpcbench.validation.library import Program, edge_only, load_library

PROBLEMS = load_problems()
SEEDS = range(20)
ENTRIES = [(pid, p) for pid, b in sorted(PROBLEMS.items()) if b.problem.held_out is not None
           for lib in [load_library(b, "checks")] if lib is not None for p in edge_only(lib)]


def seeds_missing(bundle: ProblemBundle, prog: Program, seeds, draws: int = 1) -> list[int]:
    """The seeds whose held-out draw has no case inside the program's wrong_where."""
    return [s for s in seeds if not any(prog.wrong_at(c.args) for c in draw(bundle.problem, s, draws))]


@pytest.mark.parametrize("pid,prog", ENTRIES, ids=[f"{pid}:{p.name}" for pid, p in ENTRIES])
def test_every_draw_has_a_case_where_each_edge_only_program_is_wrong(pid, prog):
    """20 seeds of `hpcbench run`'s draw, and validate-checks' own draw (its seed, LIBRARY_DRAWS
    seeds): each holds a case inside the program's region. A region no stratum always reaches
    (narrower than the band at the range's end, or two params' ends in one case) fails here: the
    band is widened (`edge`) or the region described as the program's mistake really is."""
    b = PROBLEMS[pid]
    assert not seeds_missing(b, prog, SEEDS), f"{pid} {prog.name}: no case in {prog.wrong_where}"
    assert not seeds_missing(b, prog, [VALIDATION_SEED], CHECKS_LIBRARY.held_out_draws)


def test_the_harness_sees_a_region_the_draw_misses():
    """Negative controls: a region in the middle of a range (alpha 80-81 of 20-150) is missed by
    most draws, and the old uniform one-case draw missed the top band of alpha at most seeds."""
    b = PROBLEMS["rosenbrock"]
    middle = Program(name="middle", reason="wrong only at alpha 80-81", entry_class="edge-only",
                     wrong_where={"-alpha": (80.0, 81.0)})
    assert len(seeds_missing(b, middle, SEEDS)) >= 15
    top = Program(name="top", reason="wrong only above alpha 136.5", entry_class="edge-only",
                  wrong_where={"-alpha": (136.5, 150.0)})
    assert not seeds_missing(b, top, SEEDS)
    uniform = b.model_copy(update={"problem": b.problem.model_copy(update={
        "held_out": b.problem.held_out.model_copy(update={"cases": 1})})})
    assert len(seeds_missing(uniform, top, SEEDS)) >= 12


@pytest.mark.parametrize("where,words", [
    ({"class": "edge-only"}, "says where it is wrong"),
    ({"wrong_where": {"-alpha": [140, 150]}}, "says where it is wrong"),
    ({"class": "edge-only", "wrong_where": {"-beta": [1, 2]}}, "not a held-out param"),
    ({"class": "edge-only", "wrong_where": {"-alpha": [200, 300]}}, "outside the held-out range"),
    ({"class": "edge-only", "wrong_where": {"-alpha": [150, 140]}}, "above"),
    ({"class": "solver-residual"}, "not a class of a wrong entry"),
    ({"class": "edge-ony"}, "class"),
])
def test_a_bad_class_or_region_names_the_file_and_field(tmp_path, where, words):
    from hpcbench.errors import ConfigError

    folder = tmp_path / "rosenbrock"
    shutil.copytree(PROBLEMS["rosenbrock"].folder, folder)
    lib = json.loads((folder / "mutants" / "mutants.json").read_text())
    lib["wrong"][0].update(where)
    (folder / "mutants" / "mutants.json").write_text(json.dumps(lib))
    with pytest.raises(ConfigError, match=words) as e:
        load_library(load_problem(folder), "checks")
    assert "mutants.json" in str(e.value) and re.search(r"wrong(\[0\]|\.0)", str(e.value))


def test_a_rejected_variant_names_the_drawn_arguments_of_the_case_it_failed():
    from hpcbench.validation.checks import with_drawn_args

    drawn = draw(PROBLEMS["stokes-fieldsplit"].problem, 0)
    why = "5 of 6 checks passed; worst: held-out case held-out-2: at most 60 outer iterations: 1 of 1 outside"
    shown = with_drawn_args(why, drawn)
    assert f"held-out-2 ({' '.join(drawn[1].args)}, {drawn[1].ranks[0]} rank" in shown
    assert with_drawn_args(shown, drawn) == shown and with_drawn_args(why, []) == why


# ------------------------------------------------------------------------------------------------
# Real runs: each bundled edge-only program beside its reference at the first seed's case inside
# its region, judged by the checks that judge held-out cases; one check must fail outright there
# (a score of 0 caps the accuracy at 0.4, below the kill line, whatever the rest give).


def held_out_verdicts(bundle: ProblemBundle, got: dict, ref: dict, args: list[str]) -> list[tuple[str, float, str]]:
    """(check, score, why) of every check that judges held-out cases, at one held-out run with
    these arguments."""
    out = []
    for chk in bundle.checks.checks:
        if not applies_to(chk, "held-out-1") or chk.kind == "residual":  # judged from runs' solver records
            continue
        value = got.get(chk.quantity)
        if value is None:
            out.append((chk.quantity, 0.0, "not printed"))
        elif isinstance(chk, SanityCheck):
            out.append((chk.name, *sanity_score(value, chk)))
        elif isinstance(chk, CompareCheck):
            out.append((chk.quantity, *compare_score(value, ref[chk.quantity], chk, case_factor(chk, args))))
    return out


def run_in_region(bundle: ProblemBundle, prog: Program, workdir) -> tuple[list, list]:
    """Build the reference and the program, run both at the first seed's case in the region:
    (the program's verdicts, the reference's)."""
    from hpcbench.validation.library import apply_edits
    from tests.petsc_tools import build, quantities, run

    case = next(c for s in SEEDS for c in draw(bundle.problem, s) if prog.wrong_at(c.args))
    src = workdir / "src"
    src.mkdir(parents=True)
    for name, text in apply_edits(bundle, "checks", prog, prog.name).items():
        (src / name).write_text(text)
    ref_bin = build(bundle.reference_dir, workdir / "reference")
    bin_ = build(src, workdir / "program")
    args, ranks, limit = case.args, case.ranks[0], case.time_limit_s * 4
    ref = quantities(run(ref_bin, args, ranks=ranks, timeout=limit))
    try:
        got = quantities(run(bin_, [*prog.args, *args], ranks=ranks, timeout=limit))
    except AssertionError:
        # a non-zero exit (a crash, a solver failure the program reports) is a failed run: the
        # pipeline takes nothing it printed, so every quantity counts as not printed
        got = {}
    return held_out_verdicts(bundle, got, ref, args), held_out_verdicts(bundle, ref, ref, args)


@pytest.mark.petsc
@pytest.mark.slow
@pytest.mark.parametrize("pid,prog", ENTRIES, ids=[f"{pid}:{p.name}" for pid, p in ENTRIES])
def test_each_edge_only_program_fails_a_check_outright_inside_its_region(pid, prog, tmp_path):
    verdicts, reference = run_in_region(PROBLEMS[pid], prog, tmp_path)
    assert all(s == 1.0 for _, s, _ in reference), reference
    assert any(s == 0.0 for _, s, _ in verdicts), f"{pid} {prog.name} inside {prog.wrong_where}: {verdicts}"


# ------------------------------------------------------------------------------------------------
# The harness and validate-checks' draws end to end, on a copy of rosenbrock (1 rank, a Tao solve
# of at most 16 unknowns: the cheapest problem with three ranges) whose library holds one
# edge-only wrong program and one "valid" variant that breaks the task's answer only at the top of
# the -scale range: validate-checks runs the library at its held-out draws and reports the first
# killed and the second not valid, naming the drawn case.

ALPHA_TOP = {"name": "alpha-top", "reason": "the minimiser moved by 1e-3 where alpha > 136.5 (the top 10%)",
             "class": "edge-only", "wrong_where": {"-alpha": [136.5, 150]},
             "edits": [{"find": '"-scale must be positive");',
                        "replace": '"-scale must be positive");\n  if (user.alpha > 136.5) user.scale *= 1.001;'}]}
SCALE_TOP = {"name": "scale-top", "reason": "labelled valid, wrong where -scale > 2.3 (its top band)",
             "edits": [{"find": '"-scale must be positive");',
                        "replace": '"-scale must be positive");\n  if (user.scale > 2.3) user.scale *= 1.001;'}]}


@pytest.mark.petsc
@pytest.mark.slow
def test_validate_checks_kills_an_edge_only_program_and_rejects_a_variant_wrong_at_a_drawn_value(tmp_path):
    import hpcbench.problem as problem_mod
    from hpcbench.validation import checks as vc

    root = tmp_path / "problems"
    shutil.copytree(PROBLEMS["rosenbrock"].folder, root / "rosenbrock")
    (root / "rosenbrock" / "mutants" / "mutants.json").write_text(json.dumps({
        "wrong": [ALPHA_TOP], "valid": [{"name": "as-is", "reason": "the reference as it is"}, SCALE_TOP]}))
    bundle = load_problem(root / "rosenbrock")
    prog = edge_only(load_library(bundle, "checks"))[0]
    assert not seeds_missing(bundle, prog, SEEDS)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(problem_mod, "default_problems_dir", lambda: root)
        [report] = vc.validate_checks(["rosenbrock"], tmp_path / "vc", vc.Options(generated=0))
    assert not report.error, report.error
    by = {o.name: o for o in report.outcomes}
    # right at every published case: the screen passes it, the held-out cases of the full run kill it
    assert by["alpha-top"].killed and not by["alpha-top"].screened, by["alpha-top"]
    assert by["as-is"].accepted, by["as-is"].why
    assert not by["scale-top"].accepted and by["scale-top"].score is not None, by["scale-top"]
    assert re.search(r"held-out case held-out-\d+ \(-n \d+ -alpha [\d.]+ -scale 2\.[345]\d*, 1 rank\)",
                     by["scale-top"].why), by["scale-top"].why
    drawn = json.loads((tmp_path / "vc" / "campaigns" / "rosenbrock" / "snapshot" / "held_out.json").read_text())
    assert len(drawn["problems"]["rosenbrock"]) == 3 * CHECKS_LIBRARY.held_out_draws
