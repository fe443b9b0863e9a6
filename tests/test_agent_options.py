"""A submission's args and ranks are limited to what its problem allows (problem.json
agent_options and allowed_ranks): options that would switch off or redirect what hpcbench
measures are refused with the reason, when the tree is loaded and again when jobs are planned."""

from __future__ import annotations

import json

import pytest

from hpcbench.agent_options import args_refusal, is_option_name
from hpcbench.plan.campaign import Campaign, PlanRequest, plan_jobs
from hpcbench.problem import load_problems
from hpcbench.site import load_site
from hpcbench.submission import LoadedSubmission, Submission, load_submission, load_tree

PROBLEMS = load_problems()
RULES = {pid: b.problem for pid, b in PROBLEMS.items()}
GOOD_C = "#include <petscsys.h>\nint main(int argc, char **argv)\n{\n  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));\n  PetscCall(PetscFinalize());\n  return 0;\n}\n"  # noqa: E501


def _attempt(root, problem="rosenbrock", **meta):
    d = root / "me" / problem / "1"
    d.mkdir(parents=True)
    (d / "main.c").write_text(GOOD_C)
    (d / "submission.json").write_text(json.dumps({"entry": "main.c", "files": ["main.c"], **meta}))
    return d


@pytest.mark.parametrize("args,words", [
    (["-prefix_push", "x_"], "renaming every option"),       # the review's: all instrumentation renamed
    (["-PREFIX_PUSH", "x_"], "renaming every option"),       # PETSc compares names without case
    (["--prefix_push", "x_"], "renaming every option"),      # and takes two dashes for one
    (["-prefix_pop"], "renaming every option"),
    (["-options_file", "opts"], "options database"),
    (["-options_left", "0"], "options database"),
    (["-options_string_yaml", "x"], "options database"),
    (["-skip_petscrc"], "option files"),
    (["-malloc_debug", "0"], "allocator"),
    (["-malloc_dump", "0"], "allocator"),
    (["-nomalloc_debug"], "not an option this problem lets"),
    (["-memory_view"], "allocator"),
    (["-log_view", ":/tmp/x:ascii_xml"], "logging"),
    (["-log_exclude", "vec"], "logging"),
    (["-info", ":/tmp/x"], "logging"),
    (["-on_error_abort"], "error handling"),
    (["-error_output_stderr"], "error handling"),
    (["-no_signal_handler"], "error handling"),
    (["-fp_trap", "0"], "error handling"),
    (["-help"], "help or version"),
    (["-version"], "help or version"),
    (["-tao_view", "ascii:/tmp/x"], "viewers"),
    (["-tao_ls_monitor"], "viewers"),
    (["-tao_nls_ksp_converged_reason"], "viewers"),
    (["-tao_type", "-malloc_dump"], "allocator"),            # a value slot holding an option is an option
    (["-n", "5"], "test cases set it"),                     # the problem's own options
    (["-alpha", "1"], "test cases set it"),
    (["-scale", "1"], "test cases set it"),                 # drawn by the held-out case only: still the cases'
    (["-ksp_type", "cg"], "not an option this problem lets"),
    (["gmres"], "follows no option"),
    (["-tao_type", "nls", "extra"], "follows no option"),
    # options the viewer words miss (outside review, 5379f62): each takes a viewer as its value
    (["-tao_nls_ksp_converged_rate", "ascii:F"], "names a viewer or a file"),
    (["-tao_nls_ksp_compute_eigenvalues", "ascii:../logs/F"], "names a viewer or a file"),
    (["-tao_nls_ksp_compute_singularvalues", "draw:tikz:/tmp/x"], "names a viewer or a file"),
    (["-tao_nls_ksp_plot_eigenvalues", "binary:x.bin"], "names a viewer or a file"),
    (["-tao_nls_pc_type", "../x"], "names a viewer or a file"),
    # 256 arguments of 4090 characters once passed, and every run failed with E2BIG
    (["-tao_type", "n" * 300], "at most 256"),
    (["-tao_type", "nls"] + ["-tao_max_it", "9" * 250] * 16, "4096 characters in all"),
    (["-tao_max_it", "5"] * 40, "at most 64 arguments"),
    (["-tao_type nls"], "not one option name"),
])
def test_options_that_touch_the_harness_or_are_not_allowed_are_refused(tmp_path, args, words):
    d = _attempt(tmp_path, args=args)
    res = load_submission(d, "me", "rosenbrock", set(RULES), "1", problems=RULES)
    assert not isinstance(res, LoadedSubmission), args
    assert res.path == d / "submission.json" and res.field == "args" and words in res.reason, res.reason


@pytest.mark.parametrize("args", [[], ["-tao_type", "nls"], ["--tao_type", "bntr", "-tao_gatol", "1e-9"],
                                  ["-tao_ls_type", "more-thuente"], ["-TAO_TYPE", "lmvm"]])
def test_allowed_solver_choices_pass(tmp_path, args):
    d = _attempt(tmp_path, args=args)
    assert isinstance(load_submission(d, "me", "rosenbrock", set(RULES), "1", problems=RULES), LoadedSubmission)


def test_numbers_are_values_as_petsc_reads_them():
    # options.c PetscOptionsValidKey: "-" + a letter, not a number (-inf, -nan are numbers)
    assert not is_option_name("-0.75") and not is_option_name("-inf") and not is_option_name("-NaN")
    assert is_option_name("-information") and is_option_name("--ksp_type") and not is_option_name("-")
    darcy = RULES["darcy-dmplex"]
    assert args_refusal(["-pc_gamg_threshold", "-0.1"], darcy.agent_options, darcy.case_options()) is None


@pytest.mark.parametrize("problem,ranks,ok", [
    ("vec-scatter", [7], False), ("vec-scatter", [1], False), ("vec-scatter", [3], True), ("vec-scatter", [], True),
    ("rosenbrock", [2], False), ("rosenbrock", [1], True), ("darcy-dmplex", [64], True),
])
def test_ranks_the_problem_does_not_run_at_are_refused(tmp_path, problem, ranks, ok):
    d = _attempt(tmp_path, problem=problem, ranks=ranks)
    res = load_submission(d, "me", problem, set(RULES), "1", problems=RULES)
    assert isinstance(res, LoadedSubmission) == ok, res
    if not ok:
        assert res.field == "ranks" and "not a rank count this problem runs at" in res.reason


def test_every_bundled_mutant_variant_and_reference_keeps_to_its_problem():
    import glob

    for f in glob.glob(str(PROBLEMS["vec-scatter"].folder.parent / "*" / "mutants" / "mutants.json")):
        pid = f.split("/")[-3]
        p = RULES[pid]
        for kind in ("wrong", "valid"):
            for m in json.loads(open(f).read()).get(kind, []):
                assert args_refusal(m.get("args", []), p.agent_options, p.case_options()) is None, (pid, m["name"])


def test_a_tree_loads_the_good_and_names_the_bad(tmp_path):
    _attempt(tmp_path, args=["-prefix_push", "x_"])
    good = tmp_path / "me" / "rosenbrock" / "2"
    good.mkdir()
    (good / "main.c").write_text(GOOD_C)
    (good / "submission.json").write_text(json.dumps({"entry": "main.c", "files": ["main.c"],
                                                      "args": ["-tao_type", "nls"]}))
    ok, bad = load_tree(tmp_path, set(RULES), problems=RULES)
    assert [s.meta.attempt for s in ok] == ["2"] and len(bad) == 1 and bad[0].field == "args"


def test_planning_refuses_args_that_loading_did_not_check(tmp_path):
    """Defence in depth: a submission that reached the planner some other way is rejected there,
    never turned into a job spec."""
    meta = Submission(problem="rosenbrock", agent="me", entry="main.c", files=["main.c"], args=["-malloc_dump", "0"])
    folder = _attempt(tmp_path / "tree")
    sub = LoadedSubmission(meta, folder)
    plan = plan_jobs(Campaign(tmp_path / "c"), load_site("local"), PlanRequest({"rosenbrock": PROBLEMS["rosenbrock"]},
                                                                              [sub]))
    assert not plan.jobs and plan.rejected and plan.rejected[0].field == "args"


@pytest.mark.parametrize("patterns,words", [
    (["-log_view"], "can never be allowed"),
    (["-malloc_*"], "can never be allowed"),
    (["-KSP_TYPE"], "lower case"),
    (["ksp_type"], "must be an option name"),
    (["-ksp_*_type"], "must be an option name"),
])
def test_problem_json_agent_options_are_checked_when_loaded(tmp_path, patterns, words):
    import shutil

    from hpcbench.errors import ConfigError
    from hpcbench.problem import load_problem

    folder = tmp_path / "rosenbrock"
    shutil.copytree(PROBLEMS["rosenbrock"].folder, folder)
    prob = json.loads((folder / "problem.json").read_text())
    prob["agent_options"] = patterns
    (folder / "problem.json").write_text(json.dumps(prob))
    with pytest.raises(ConfigError, match=words) as e:
        load_problem(folder)
    assert "problem.json" in str(e.value) and "agent_options" in str(e.value)
