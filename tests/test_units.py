"""Parsers, validation and scoring rules, without a cluster."""

import json
import os
import sys
import time
from pathlib import Path

import pytest

from hpcbench.errors import ConfigError
from hpcbench.evaluators.base import EvalResult
from hpcbench.evaluators.gates.api_usage import ApiUsage
from hpcbench.evaluators.metrics.execution_time import time_score
from hpcbench.evaluators.metrics.numerical_accuracy import compare_score, sanity_score
from hpcbench.evaluators.output_contract import parse_quantities
from hpcbench.evaluators.quality.public_api import PublicApi
from hpcbench.jobs.capture import Confinement, run_captured
from hpcbench.jobs.logview import parse_options_left
from hpcbench.jobs.malloc_dump import parse_malloc_dump
from hpcbench.jobs.records import Limits
from hpcbench.problem import CompareCheck, SanityCheck, load_problem, load_problems
from hpcbench.score.scoring import aggregate, tier
from hpcbench.site import load_site
from hpcbench.submission import load_submission, load_tree

# Lines as PETSc 3.26 prints them for a Vec that was never destroyed (seen on this machine).
MALLOC_DUMP = """\
[ 0] 400 bytes VecCreate_MPI_Private() at /p/src/vec/vec/impls/mpi/pbvec.c:589
[ 1] 1568 bytes VecCreateWithLayout_Private() at /p/src/vec/vec/interface/veccreate.c:104
[ 0]16 bytes PetscStrallocpy() line 97 in /p/src/sys/utils/str.c
"""


def test_malloc_dump_lines_become_leaks():
    leaks = parse_malloc_dump(MALLOC_DUMP)
    assert [(lk.rank, lk.bytes, lk.function, lk.line) for lk in leaks] == [
        (0, 400, "VecCreate_MPI_Private", 589), (1, 1568, "VecCreateWithLayout_Private", 104),
        (0, 16, "PetscStrallocpy", 97)]
    assert parse_malloc_dump("memory leak\nall good\n") == []


def test_options_left():
    out = "Option left: name:-foo value: 3 source: command line\nOption left: name:-bar (no value) source: code"
    assert parse_options_left(out) == ["-foo 3", "-bar"]


def test_output_contract_last_line_wins_and_ignores_prose():
    q = parse_quantities("iter: 1\nnote: converged nicely\nsolution: 1.0 2e-3\nsolution: 1 2\nOption left: x")
    assert q == {"iter": [1.0], "solution": [1.0, 2.0]}


def test_time_score_matches_the_paper_rule():
    th = (0.5, 1.0, 2.0, 4.0)
    assert time_score(0.1, th) == 1.0
    assert time_score(1.0, th) == pytest.approx(0.8)
    assert time_score(1.5, th) == pytest.approx(0.7)
    assert time_score(4.0, th) == pytest.approx(0.2)
    assert time_score(8.0, th) == pytest.approx(0.1)


def test_compare_band_decays_linearly():
    chk = CompareCheck(kind="compare", quantity="x", reference={"source": "reference_run"}, atol=1e-3,
                       fail_factor=11)
    assert compare_score([1.0005], [1.0], chk)[0] == 1.0
    assert compare_score([1.006], [1.0], chk)[0] == pytest.approx(0.5)
    assert compare_score([1.5], [1.0], chk)[0] == 0.0
    assert compare_score([1.0, 2.0], [1.0], chk)[0] == 0.0
    assert compare_score([float("nan")], [1.0], chk)[0] == 0.0


def test_sanity_conservation():
    chk = SanityCheck(kind="sanity", name="mass", quantity="y", test="sum_equals", target=1.0, atol=1e-6)
    assert sanity_score([0.5, 0.25, 0.25], chk)[0] == 1.0
    assert sanity_score([0.5, 0.25, 0.2], chk)[0] == 0.0


def _r(cat, score, conf=1.0, status="scored"):
    return EvalResult(evaluator=f"e{cat}{score}", stage="metric", category=cat, score=score, confidence=conf,
                      status=status)


def test_aggregate_is_confidence_weighted_and_leaves_out_unscored():
    cats, comp, left = aggregate([_r("correctness", 1.0, 1.0), _r("correctness", 0.0, 0.25),
                                  _r("performance", 0.5), _r("code", None, 0.0, "unscored")])
    assert cats["correctness"] == pytest.approx(0.8)
    assert "code" in left and "appropriateness" in left and "library" in left
    assert comp == pytest.approx(100 * (0.35 * 0.8 + 0.15 * 0.5) / 0.5)
    assert tier(85, True) == "GOLD" and tier(70, True) == "SILVER" and tier(50, True) == "BRONZE"
    assert tier(49.9, True) == "NONE" and tier(None, True) == ""
    # a wrong answer keeps its composite but never a tier
    assert tier(99.0, False) == "NONE" and tier(None, False) == ""


def _sub(tmp_path, meta, files=None):
    d = tmp_path / "a" / "vec-scatter" / "1"
    d.mkdir(parents=True)
    (d / "submission.json").write_text(meta if isinstance(meta, str) else json.dumps(meta))
    for name, text in (files or {}).items():
        (d / name).write_bytes(text)
    return d


@pytest.mark.parametrize("meta,files,field,words", [
    ("{not json", {}, None, "malformed JSON"),
    ({"entry": "main.c", "files": ["../x.c"]}, {}, "files", "escapes"),
    ({"entry": "main.c", "files": ["/etc/passwd.c"]}, {}, "files", "escapes"),
    ({"entry": "main.c", "files": ["main.c", "main.c"]}, {"main.c": b"int main;"}, "files", "duplicate"),
    ({"entry": "other.c", "files": ["main.c"]}, {"main.c": b"int main;"}, "entry", "not among"),
    ({"entry": "main.c", "files": ["main.c"]}, {}, "files", "missing"),
    ({"entry": "main.c", "files": ["main.c"]}, {"main.c": b"\x00\x01ELF"}, "files", "binary"),
    ({"entry": "main.c", "files": ["main.c"], "problem": "nope"}, {"main.c": b"x"}, "problem", "folder says"),
])
def test_bad_submissions_are_rejected_with_file_and_reason(tmp_path, meta, files, field, words):
    d = _sub(tmp_path, meta, files)
    res = load_submission(d, "a", "vec-scatter", {"vec-scatter"})
    assert not hasattr(res, "meta")
    assert res.field == field and words in res.reason and res.path == d / "submission.json"


def test_a_bad_submission_does_not_stop_the_rest(tmp_path):
    _sub(tmp_path, "{", {})
    good = tmp_path / "a" / "vec-scatter" / "2"
    good.mkdir()
    (good / "main.c").write_text("int main(void){return 0;}\n")
    (good / "submission.json").write_text(json.dumps({"entry": "main.c", "files": ["main.c"]}))
    (tmp_path / "a" / "unknown-problem" / "1").mkdir(parents=True)
    ok, bad = load_tree(tmp_path, {"vec-scatter"})
    assert [s.meta.attempt for s in ok] == ["2"]
    assert len(bad) == 2


def test_bad_problem_file_names_file_and_field(tmp_path):
    src = load_problems()["vec-scatter"].folder
    d = tmp_path / "vec-scatter"
    d.mkdir()
    meta = json.loads((src / "problem.json").read_text())
    meta["difficulty"] = "trivial"
    (d / "problem.json").write_text(json.dumps(meta))
    (d / "checks.json").write_text((src / "checks.json").read_text())
    with pytest.raises(ConfigError) as e:
        load_problem(d)
    assert "problem.json" in str(e.value) and "difficulty" in str(e.value)


def test_bad_site_file_names_file_and_field(tmp_path):
    p = tmp_path / "mysite.yaml"
    p.write_text("name: x\nscheduler: lsf\n")
    with pytest.raises(ConfigError) as e:
        load_site(str(p))
    assert "mysite.yaml" in str(e.value) and "scheduler" in str(e.value)
    assert load_site("local").scheduler == "local"


def test_checks_only_name_declared_quantities():
    for b in load_problems().values():
        declared = {q.name for q in b.problem.output}
        assert declared and {c.quantity for c in b.checks.checks if c.kind != "residual"} <= declared
        assert not any(k in b.problem.public_view() for k in ("checks", "reference"))


def test_timeout_kills_the_whole_process_group(tmp_path):
    marker = tmp_path / "late"
    t0 = time.perf_counter()
    cap = run_captured(["sh", "-c", f"(sleep 3; touch {marker}) & sleep 30"], cwd=tmp_path, env=dict(os.environ),
                       timeout_s=1.0, confinement=Confinement(Limits()))
    assert cap.timed_out and "timeout" in cap.stopped_reason and time.perf_counter() - t0 < 10
    time.sleep(3.5)
    assert not marker.exists(), "a background child outlived the run"


def test_output_flood_is_capped_and_stopped(tmp_path):
    lim = Limits(output_bytes=1000, flood_bytes=200_000)
    cap = run_captured([sys.executable, "-c", "import sys\nwhile True: sys.stdout.write('x'*4096)"],
                       cwd=tmp_path, env=dict(os.environ), timeout_s=30, output_cap=1000,
                       confinement=Confinement(lim))
    assert "flood" in cap.stopped_reason and len(cap.stdout) == 1000 and cap.stdout_truncated


def test_api_usage_parses_instead_of_grepping():
    from hpcbench.evaluators.base import EvalContext
    from hpcbench.submission import Submission

    prob = load_problems()["vec-scatter"]
    # PetscFinalize only in a comment, VecCreate before PetscInitialize, private header
    src = ('#include <petsc/private/vecimpl.h>\nint main(int c,char**v){Vec x; VecCreate(PETSC_COMM_WORLD,&x);\n'
           'PetscInitialize(&c,&v,0,0); VecScatterCreateToZero(x,0,0); /* PetscFinalize(); */ return 0;}\n')
    ctx = EvalContext(problem=prob.problem, checks=prob.checks,
                      submission=Submission(problem="vec-scatter", agent="t", entry="main.c", files=["main.c"]),
                      sources={"main.c": src}, record=None)
    res = ApiUsage().evaluate(ctx)
    assert res.passed is False
    for words in ("never calls PetscFinalize", "before PetscInitialize"):
        assert words in res.rationale
    # a private header is a finding of practice (public_api, library category), not a zero
    assert "private" not in res.rationale and res.evidence["private_includes"] == ["main.c: petsc/private/vecimpl.h"]
    ref = (Path(prob.folder) / "reference" / "main.c").read_text()
    ctx.sources = {"main.c": ref}
    assert ApiUsage().evaluate(ctx).passed is True
    assert PublicApi().evaluate(ctx).score == 1.0
    ctx.sources = {"main.c": "#include <petsc/private/kernels/blockinvert.h>\n" + ref}
    res = ApiUsage().evaluate(ctx)
    assert res.passed is True and "private headers included" in res.rationale
    pub = PublicApi().evaluate(ctx)
    assert pub.score == 0.5 and pub.category == "library" and "blockinvert.h" in pub.rationale
    assert pub.evidence["findings"][0].startswith("main.c:1:10: HB303")


def test_api_usage_accepts_a_dm_typed_after_creation_and_rejects_the_wrong_type():
    from hpcbench.evaluators.base import EvalContext
    from hpcbench.submission import Submission

    prob = load_problems()["darcy-dmplex"]
    body = ('#include <petscdmplex.h>\n#include <petscfe.h>\nint main(int c,char**v){DM dm; PetscFE fe; KSP k;\n'
            'PetscCall(PetscInitialize(&c,&v,0,0)); PetscCall(DMCreate(PETSC_COMM_WORLD,&dm));\n'
            'PetscCall(DMSetType(dm, %s)); PetscCall(PetscFECreateLagrange(PETSC_COMM_WORLD,2,1,PETSC_FALSE,1,'
            'PETSC_DETERMINE,&fe)); PetscCall(KSPCreate(PETSC_COMM_WORLD,&k)); PetscCall(PetscFinalize());\n'
            'return 0;}\n')
    ctx = EvalContext(problem=prob.problem, checks=prob.checks,
                      submission=Submission(problem="darcy-dmplex", agent="t", entry="main.c", files=["main.c"]),
                      sources={"main.c": body % "DMPLEX"}, record=None)
    assert ApiUsage().evaluate(ctx).passed is True
    ctx.sources = {"main.c": body % "DMDA"}
    res = ApiUsage().evaluate(ctx)
    assert res.passed is False and "DMPlex" in res.rationale
    # any of the module's constructors counts, PETSc 3.26's newer ones included
    ctx.sources = {"main.c": (body % "DMPLEX").replace("PetscFECreateLagrange(", "PetscFECreateLagrangeByCell(")}
    assert ApiUsage().evaluate(ctx).passed is True
    ctx.sources = {"main.c": (body % "DMPLEX").replace("PetscFECreateLagrange(", "PetscFEGetDimension(")}
    res = ApiUsage().evaluate(ctx)
    assert res.passed is False and "PetscFE" in res.rationale


def test_a_fork_bomb_is_held_to_the_process_limit_and_leaves_nothing_behind(tmp_path):
    """Also as root, where RLIMIT_NPROC does not apply: the run's pids cgroup holds it."""
    bomb = tmp_path / "bomb.py"
    marker = tmp_path / "alive"
    bomb.write_text(
        "import os, sys, time\n"
        "made = 0\n"
        "for _ in range(400):\n"
        "    try:\n"
        "        pid = os.fork()\n"
        "    except OSError:\n"
        "        continue\n"
        "    if pid == 0:\n"
        "        os.setsid()  # tries to escape the process-group kill\n"
        f"        time.sleep(3); open({str(marker)!r}, 'w').write('survived'); os._exit(0)\n"
        "    made += 1\n"
        "print('forked', made, flush=True)\n")
    lim = Limits(processes=40)
    cap = run_captured([sys.executable, str(bomb)], cwd=tmp_path, env=dict(os.environ), timeout_s=60,
                       confinement=Confinement(lim))
    forked = int(cap.stdout.split()[-1])
    assert forked < 40, cap.stdout
    if os.geteuid() == 0:
        assert "process limit" in cap.stopped_reason and "forks refused" in cap.stopped_reason
    time.sleep(4)
    assert not marker.exists(), "a forked child outlived the run"


def test_exec_time_is_petscs_own_unless_the_wall_clock_says_work_happened_outside_it():
    from hpcbench.jobs.job import summarise_timings
    from hpcbench.jobs.records import LogView, RunResult

    def run(kind, wall, petsc=None):
        return RunResult(case="c", ranks=1, kind=kind, repeat=0, variant="cpu", command=[], exit_code=0,
                         wall_s=wall, log_view=LogView(total_time_s=petsc) if petsc is not None else None)

    null = [run("null", w) for w in (0.40, 0.42, 0.38)]
    # honest program: launcher noise around a 20 ms program; PETSc's time is the answer
    t = summarise_timings([run("timing", w, 0.020) for w in (0.45, 0.41, 0.43)], null)
    assert t.exec_source == "log_view" and t.exec_s == 0.020
    # 2 s of work before PetscInitialize: -log_view cannot see it, wall - null can
    t = summarise_timings([run("timing", w, 0.020) for w in (2.44, 2.41, 2.43)], null)
    assert t.exec_source == "wall_minus_null" and abs(t.exec_s - 2.03) < 1e-9
    # no -log_view at all (the program never reached PetscFinalize's logging)
    t = summarise_timings([run("timing", 0.9)], null)
    assert t.exec_source == "wall_minus_null" and abs(t.exec_s - 0.5) < 1e-9


def test_registry_names_a_clash_and_dispatches_agent_specs_by_prefix():
    from hpcbench.agents import AgentOptions, make_agent
    from hpcbench.agents.dir_agent import DirAgent, ReferenceAgent
    from hpcbench.agents.litellm_agent import LitellmAgent
    from hpcbench.agents.repair_agent import RepairAgent
    from hpcbench.errors import HpcbenchError
    from hpcbench.evaluators.base import EVALUATORS, all_evaluators
    from hpcbench.evaluators.categories import CATEGORIES, WEIGHTS, Category
    from hpcbench.registry import Registry

    class Widget:
        name = ""

    reg: Registry[type[Widget]] = Registry("widget", "hpcbench.no-such-group")
    assert reg.part("a")(Widget) is Widget and Widget.name == "a"  # the class itself, told its name
    reg.add("a", Widget)  # the same part registered twice (a module imported again) is no clash
    with pytest.raises(HpcbenchError, match="two widgets named 'a'"):
        reg.part("a")(type("Other", (Widget,), {}))
    assert reg.get("b") is None and reg.names() == ["a"]
    # Every in-tree evaluator is in the registry under its own name, in a declared category.
    evs = all_evaluators()
    assert {e.name for e in evs} == set(EVALUATORS.names())
    assert {e.category for e in evs} <= set(Category.__args__) and CATEGORIES == list(WEIGHTS)
    assert sum(WEIGHTS.values()) == pytest.approx(1.0)
    bundles = load_problems(None, ["rosenbrock"])
    opts = AgentOptions()
    assert isinstance(make_agent("reference", bundles, set(bundles), opts), ReferenceAgent)
    assert isinstance(make_agent("dir:/nowhere", bundles, set(bundles), opts), DirAgent)
    rep = make_agent("repair:litellm:openai/m:2", bundles, set(bundles), opts, sandbox_factory=lambda: None)
    assert isinstance(rep, RepairAgent) and isinstance(rep.inner, LitellmAgent) and rep.rounds == 2
    with pytest.raises(HpcbenchError, match="repair needs an agent that takes feedback"):
        make_agent("repair:dir:/x:2", bundles, set(bundles), opts, sandbox_factory=lambda: None)
    with pytest.raises(HpcbenchError, match=r"'nope:x': known agents are a2a:URL, dir:PATH, litellm:MODEL, "
                                            r"reference, reference-python, repair:INNER:N, samples"):
        make_agent("nope:x", bundles, set(bundles), opts)
    with pytest.raises(HpcbenchError, match="'reference:x': reference takes no argument"):
        make_agent("reference:x", bundles, set(bundles), opts)
    with pytest.raises(HpcbenchError, match="write repair:INNER:N"):
        make_agent("repair:dir:/x", bundles, set(bundles), opts)
