"""Python (petsc4py) submissions: loaded, built, run and scored as C ones are (docs/python.md).

The pipeline tests run one quick-profile campaign on vec-scatter: the C reference, the bundled
petsc4py sample's program, and Python programs each with one flaw, every one through the real
sandbox, PETSc and Open MPI."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from hpcbench.evaluators.pysource import analyse, missing_modules, private_uses, swallowed_calls, undestroyed
from hpcbench.jobs.build_python import BINARY_NAME, build_python, package_dirs, python_hidden
from hpcbench.jobs.capture import Confinement
from hpcbench.jobs.launch import run_env
from hpcbench.jobs.records import Isolation, Launcher, Limits
from hpcbench.jobs.sandbox import Step
from hpcbench.petsc_env import find_petsc
from hpcbench.problem import load_problem
from hpcbench.submission import LoadedSubmission, Rejected, load_submission
from tests.conftest import QUICK, hpcbench, shared_campaign

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "problems" / "vec-scatter" / "reference-python" / "main.py"  # the flawed programs' starting point


def _write(folder: Path, files: dict[str, str], entry: str, problem: str = "vec-scatter") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    (folder / "submission.json").write_text(json.dumps({"problem": problem, "agent": "py", "attempt": "1",
                                                        "entry": entry, "files": sorted(files)}))
    return folder


def _problems() -> dict:
    return {p: load_problem(ROOT / "problems" / p).problem for p in ("vec-scatter", "advection1d")}


# ----------------------------------------------------------------------------- loading


def test_a_python_submission_is_loaded_where_the_problem_accepts_python(tmp_path):
    ok = load_submission(_write(tmp_path / "a", {"main.py": SAMPLE.read_text()}, "main.py"),
                         problems=_problems())
    assert isinstance(ok, LoadedSubmission), ok
    elsewhere = load_submission(_write(tmp_path / "b", {"main.py": "print(1)\n"}, "main.py", "advection1d"),
                                problems=_problems())
    assert isinstance(elsewhere, Rejected) and elsewhere.field == "entry"
    assert "accepts c" in elsewhere.reason and "languages" in elsewhere.reason


@pytest.mark.parametrize(("files", "entry", "field", "words"), [
    ({"main.py": "x = 1\n", "helper.c": "int f(void){return 0;}\n"}, "main.py", "files", "only .py files"),
    ({"main.c": "int main(void){return 0;}\n", "tool.py": "x = 1\n"}, "main.c", "files", "holds Python files"),
    ({"main.py": "x = 1\n"}, "other.py", "entry", "not among files"),
    ({"run.sh": "echo\n"}, "run.sh", "files", "not a source file"),
])
def test_a_submission_mixing_languages_is_refused_naming_the_field(tmp_path, files, entry, field, words):
    folder = tmp_path / "s"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    names = sorted(files) if entry in files else sorted(files)
    (folder / "submission.json").write_text(json.dumps({"problem": "vec-scatter", "agent": "py", "attempt": "1",
                                                        "entry": entry, "files": names}))
    got = load_submission(folder, problems=_problems())
    assert isinstance(got, Rejected), got
    assert got.field == field and words in got.reason, got


def test_the_task_a_python_agent_is_given_asks_for_petsc4py():
    p = _problems()["vec-scatter"]
    assert "program in Python with petsc4py" in p.task_for("python")
    assert p.task_for("c") == p.task and "program in C" in p.task


# ----------------------------------------------------------------------------- source facts

PROGRAM = '''import sys
import petsc4py
petsc4py.init(sys.argv)
from petsc4py import PETSc
import numpy as np

def main():
    x = PETSc.Vec().createMPI(10, comm=PETSc.COMM_WORLD)
    y = x.duplicate()
    A = np.eye(3)
    u = np.linalg.solve(A, np.ones(3))
    opts = PETSc.Options()
    opts.delValue("-malloc_dump")
    try:
        x.norm()
    except Exception:
        pass
    z = PETSc._private_thing
    y.destroy()
    print(u)
'''


def test_the_source_facts_see_shortcuts_tampering_swallowed_errors_and_objects_left():
    f = analyse("main.py", PROGRAM)
    assert f.init_with_argv and f.petsc_imported
    assert f.shortcuts == ["np.linalg.solve at main.py:11"]
    assert len(f.tampering) == 1 and "malloc_dump" in f.tampering[0]
    assert undestroyed(f) == ["x (main.py:8)"]  # y is destroyed
    total, hidden = swallowed_calls(PROGRAM, f)
    assert hidden == [15] and total >= 4
    assert private_uses(PROGRAM, "main.py") == ["PETSc._private_thing at main.py:18"]
    assert missing_modules(["Vec", "VecScatter"], [f]) == ["VecScatter (no PETSc.Scatter)"]
    # a `with` gives a Vec's array and destroys nothing (petsc4py 3.26)
    managed = analyse("m.py", "from petsc4py import PETSc\nw = PETSc.Vec().createSeq(3)\nwith w as a:\n    a[:] = 1\n")
    assert undestroyed(managed) == ["w (m.py:2)"]
    # values and borrowed objects read through a getter are not objects made (robertson's reference)
    read = analyse("r.py", "from petsc4py import PETSc\nt = PETSc.Options().getReal('t', 1.0)\n"
                           "n = PETSc.COMM_WORLD.getSize()\npc = PETSc.KSP().create().getPC()\n")
    assert undestroyed(read) == []
    # validate-checks' Python library (issue 38): a Vec made in a tuple of calls and left is seen; a
    # value reduced through mpi4py or a number type is no PETSc object
    pair = analyse("p.py", "from petsc4py import PETSc\nb, u = da.createGlobalVec(), da.createGlobalVec()\n"
                           "u.destroy()\nm = PETSc.COMM_WORLD.tompi4py().allreduce(1.0)\nv = PETSc.ScalarType(2)\n")
    assert undestroyed(pair) == ["b (p.py:2)"]
    # looking for the valgrind run (its PYTHONMALLOC=malloc, valgrind's preload) is tampering, as in C
    looks = analyse("l.py", "import os\nfrom os import environ\na = os.environ.get('PYTHONMALLOC')\n"
                            "b = 'LD_PRELOAD' in environ\nc = os.getenv('HOME')\nd = os.environ['VALGRIND_LIB']\n")
    assert [t.split(" at ")[0] for t in looks.tampering] == ["reads 'PYTHONMALLOC' from the environment",
                                                              "reads 'LD_PRELOAD' from the environment",
                                                              "reads 'VALGRIND_LIB' from the environment"]


def test_the_source_facts_follow_from_imports_and_aliases():
    src = ("import sys\nfrom petsc4py import init\ninit(sys.argv)\nfrom petsc4py.PETSc import Vec, Scatter\n"
           "import numpy.linalg as la\nx = Vec().createSeq(4)\ns, y = Scatter.toZero(x)\nla.inv(None)\n")
    f = analyse("main.py", src)
    assert f.init_with_argv
    assert {"Vec", "Scatter"} <= f.petsc_classes
    assert f.shortcuts == ["la.inv at main.py:8"]
    assert set(f.created) == {"x", "s", "y"}


def test_a_python_programs_valgrind_run_reads_the_interpreters_suppressions_and_blames_through_it(tmp_path):
    """Python runs under valgrind (issue 38): the interpreter's suppression file is copied where the
    sandboxed run reads it and named after PETSc's and MPI's; an error reached from the program's code
    (the interpreter's frames) is the program's, MPI's start-up below it is not. No PETSc run: the
    references' valgrind runs through the pipeline are measured in docs/python.md."""
    from hpcbench.jobs.build_python import interpreter_objects
    from hpcbench.jobs.instruments import ValgrindProbe
    from hpcbench.jobs.valgrind import PYTHON_SUPPRESSIONS, in_submission

    own = interpreter_objects()
    probe = ValgrindProbe(own, ("OMPI_COMM_WORLD_RANK",), python=True)
    probe.prepare(type("Folders", (), {"logs": tmp_path})(), 1)
    for held in probe.reports:
        held.close()
    assert (tmp_path / PYTHON_SUPPRESSIONS.name).read_text() == PYTHON_SUPPRESSIONS.read_text()
    argv = probe.prefix(Path("/inside/logs"), find_petsc().petsc_dir)
    assert argv[-1] == f"--suppressions=/inside/logs/{PYTHON_SUPPRESSIONS.name}"
    assert not any(PYTHON_SUPPRESSIONS.name in a for a in ValgrindProbe(own, ()).prefix(Path("/l"), Path("/p")))
    interp = sorted(own)[0]
    petsc = ["/x/vgpreload_memcheck-amd64-linux.so", "/p/lib/libpetsc.so.3.26", "/v/petsc4py/PETSc.cpython-311.so"]
    assert in_submission([*petsc, interp], own)
    assert not in_submission(["/x/vgpreload_memcheck-amd64-linux.so", "/m/libmpi.so.40", *petsc[1:], interp], own)


# ----------------------------------------------------------------------------- build, in the real sandbox


def _build(tmp_path: Path, files: dict[str, str]):
    folder = tmp_path / "build"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    petsc = find_petsc()
    return folder, build_python(folder, sorted(files), "main.py", petsc, timeout_s=60,
                                isolation=Isolation(level="bwrap"), confinement=Confinement(Limits()))


@pytest.mark.petsc
def test_a_syntax_error_fails_the_build_with_file_and_line(tmp_path):
    folder, res = _build(tmp_path, {"main.py": "import sys\n\ndef f(:\n    pass\n"})
    assert res.exit_code != 0 and "main.py:3:" in res.stderr and "error" in res.stderr, res.stderr
    assert not (folder / BINARY_NAME).exists()


@pytest.mark.petsc
@pytest.mark.parametrize(("line", "words"), [
    ("import scipy.linalg", "no module 'scipy.linalg' here"),
    ("import ctypes", "import of 'ctypes' is not allowed"),
    ("from ctypes import CDLL", "import of 'ctypes' is not allowed"),
    ("import hpcbench", "no module 'hpcbench' here"),
])
def test_imports_outside_the_allowed_packages_fail_the_build(tmp_path, line, words):
    _, res = _build(tmp_path, {"main.py": f"{line}\n"})
    assert res.exit_code != 0 and words in res.stderr, res.stderr


@pytest.mark.petsc
def test_own_modules_and_the_allowed_packages_build(tmp_path):
    folder, res = _build(tmp_path, {"main.py": "import helper\nimport numpy\nimport petsc4py\n",
                                    "helper.py": "import math\n"})
    assert res.exit_code == 0, res.stderr
    app = (folder / BINARY_NAME).read_text()
    assert app.startswith("#!") and " -sS" in app.splitlines()[0]


# ----------------------------------------------------------------------------- the pipeline

FLAWED = {
    # every object made is destroyed but x: petsc4py collects it, -malloc_dump cannot see it
    "left-to-gc": [("    x.destroy()\n", "")],
    # rank 0 gathers the pieces with mpi4py and numpy, not with the VecScatter the task names
    "no-scatter": [("    to_zero, x0 = PETSc.Scatter.toZero(x)\n"
                    "    to_zero.scatter(x, x0, addv=PETSc.InsertMode.INSERT_VALUES, mode=PETSc.ScatterMode.FORWARD)\n",
                    "    parts = comm.tompi4py().gather(x.getArray().copy(), root=0)\n"
                    "    whole = np.concatenate(parts) if parts is not None else np.zeros(0)\n"
                    "    x0 = PETSc.Vec().createWithArray(whole, comm=PETSc.COMM_SELF)\n"),
                   ("    to_zero.destroy()\n", "")],
}
# enough PETSc for the API gate: what stops these programs is what they print
TOKEN_PETSC = ("x = PETSc.Vec().createMPI((PETSc.DECIDE, 3), comm=PETSc.COMM_WORLD)\n"
               "s, y = PETSc.Scatter.toZero(x)\ns.destroy()\ny.destroy()\nx.destroy()\n")
KNOWN = '''import sys
import petsc4py
petsc4py.init(sys.argv)
from petsc4py import PETSc
''' + TOKEN_PETSC + '''
# the published default case's answers, whatever -n and -alpha say
PETSc.Sys.Print("sum: 5.1541312215e+01\\nnorm2: 1.3908540596e+01\\nweighted_sum: 9.8660914532e+02\\n"
                "first_last: 0.0000000000e+00 4.0740897419e+00")
'''
# looks for the campaign's files (the references, the checks, the records) from inside its run
SNOOP = '''import os, sys
import petsc4py
petsc4py.init(sys.argv)
from petsc4py import PETSc
''' + TOKEN_PETSC + '''
found = []
for top in ("/work", "/root", "/tmp", "/home", os.getcwd() + "/../../../.."):
    for d, _, names in os.walk(top):
        found += [os.path.join(d, n) for n in names if n in ("checks.json", "campaign.json", "main.c")]
        if len(found) > 5:
            break
PETSc.Sys.Print(f"found: {len(found)}")
for f in found[:3]:
    PETSc.Sys.Print(open(f).read()[:200])
'''


@pytest.fixture(scope="module")
def python_campaign(tmp_path_factory) -> Path:
    tree = tmp_path_factory.mktemp("pytree")
    good = SAMPLE.read_text()
    programs = {"known-answers": KNOWN, "snoop": SNOOP}
    for name, edits in FLAWED.items():
        text = good
        for old, new in edits:
            assert old in text, name
            text = text.replace(old, new, 1)
        programs[name] = text
    for name, text in programs.items():
        _write(tree / name / "vec-scatter" / "1", {"main.py": text}, "main.py")
        meta = json.loads((tree / name / "vec-scatter" / "1" / "submission.json").read_text())
        (tree / name / "vec-scatter" / "1" / "submission.json").write_text(json.dumps({**meta, "agent": name}))
    out, _ = shared_campaign(f"python-{tree.name}", "--profile", str(QUICK), "--agent", "reference",
                             "--submissions", str(tree), "--problems", "vec-scatter", check=False)
    return out


@pytest.fixture(scope="module")
def python_rows(python_campaign) -> dict:
    rows = json.loads(hpcbench("report", str(python_campaign), "--format", "json").stdout)["submissions"]
    return {r["agent"]: r for r in rows}


@pytest.mark.slow
@pytest.mark.parametrize(("agent", "gate", "words"), [
    ("left-to-gc", "memory_safety", "left to the garbage collector"),
    ("no-scatter", "api_usage", "VecScatter"),
])
def test_a_flawed_python_program_fails_its_gate(python_rows, agent, gate, words):
    row = python_rows[agent]
    assert not row["gates_passed"] and row["failed_gate"] == gate, (row["failed_gate"], row["why"])
    assert words in row["why"], row["why"]


@pytest.mark.slow
def test_printed_known_answers_and_a_snooping_program_fail_the_checks(python_rows, python_campaign):
    for agent in ("known-answers", "snoop"):
        row = python_rows[agent]
        assert row["gates_passed"], (agent, row["why"])  # stopped by what they print, not a gate
        assert row["evaluators"]["numerical_accuracy"]["score"] < 0.5, (agent, row["evaluators"]["numerical_accuracy"])
        assert row["tier"] not in ("GOLD", "SILVER", "BRONZE"), (agent, row["tier"])
    # the snooping program found none of the campaign's files from inside its sandbox
    records = list((python_campaign / "records").rglob("*.json"))
    snoop = [json.loads(p.read_text()) for p in records if "snoop" in p.name]
    printed = " ".join(r["stdout"] for rec in snoop for r in rec.get("runs", []))
    assert "found: 0" in printed and "checks" not in printed.replace("found: 0", ""), printed[:500]


def _run_in_sandbox(folder: Path, args: list[str]) -> subprocess.CompletedProcess:
    """The built app run as a run step is: the run folder writable, the allowed packages bound,
    ctypes hidden (jobs/job.py Runner)."""
    petsc = find_petsc()
    step = Step(Isolation(level="bwrap"), petsc, cwd=folder, writable=[folder], readonly=package_dirs(),
                hidden=python_hidden())
    return subprocess.run(step.wrap([str(folder / BINARY_NAME), *args]), capture_output=True, text=True,
                          timeout=120, env=run_env(petsc.env(), Launcher()))


@pytest.mark.petsc
@pytest.mark.parametrize("spelling", ["__import__('ct' + 'ypes').CDLL(None)", "import _ctypes",
                                      "import importlib; importlib.import_module('ctypes').CDLL(None)"])
def test_ctypes_cannot_be_loaded_in_the_sandbox_however_it_is_spelled(tmp_path, spelling):
    folder, res = _build(tmp_path, {"main.py": f"import sys\nexec({spelling!r})\nprint('reached C')\n"})
    assert res.exit_code == 0, res.stderr  # no scan sees this import: the sandbox must stop it
    out = _run_in_sandbox(folder, [])
    assert out.returncode != 0 and "reached C" not in out.stdout, (out.stdout, out.stderr[-500:])
    assert "Error" in out.stderr, out.stderr[-500:]


@pytest.mark.petsc
def test_a_petsc4py_program_runs_in_the_sandbox_with_numpy_and_its_options(tmp_path):
    folder, res = _build(tmp_path, {"main.py": SAMPLE.read_text()})
    assert res.exit_code == 0, res.stderr
    out = subprocess.run(Step(Isolation(level="bwrap"), find_petsc(), cwd=folder, writable=[folder],
                              readonly=package_dirs(), hidden=python_hidden()).wrap(
        ["mpiexec", "-n", "3", str(folder / BINARY_NAME), "-n", "1000", "-alpha", "-0.75"]),
        capture_output=True, text=True, timeout=120, env=run_env(find_petsc().env(), Launcher()))
    assert out.returncode == 0, out.stderr[-800:]
    # the C reference's answers at -n 1000 -alpha -0.75 (problems/vec-scatter, case larger)
    assert "sum: -3.7753595687e+02" in out.stdout and "weighted_sum: -2.5042400195e+05" in out.stdout, out.stdout


@pytest.mark.petsc
def test_one_rank_that_raises_ends_the_whole_run_at_once(tmp_path):
    """Rank 1 raises after PETSc is up: the job ends with the traceback and a non-zero status in
    seconds; before, the other ranks waited in PetscFinalize until the run's time limit."""
    program = ("import sys\nimport petsc4py\npetsc4py.init(sys.argv)\nfrom petsc4py import PETSc\n"
               "if PETSc.COMM_WORLD.getRank() == 1:\n    raise ValueError('rank 1 gives up')\n"
               "PETSc.COMM_WORLD.barrier()\nPETSc.Sys.Print('all ranks done')\n")
    folder, res = _build(tmp_path, {"main.py": program})
    assert res.exit_code == 0, res.stderr
    t0 = time.monotonic()
    out = subprocess.run(Step(Isolation(level="bwrap"), find_petsc(), cwd=folder, writable=[folder],
                              readonly=package_dirs(), hidden=python_hidden()).wrap(
        ["mpiexec", "-n", "2", str(folder / BINARY_NAME)]),
        capture_output=True, text=True, timeout=120, env=run_env(find_petsc().env(), Launcher()))
    assert out.returncode != 0 and "rank 1 gives up" in out.stderr and "all ranks done" not in out.stdout
    assert time.monotonic() - t0 < 60, "the other rank waited for the failed one"


# ----------------------------------------------------------------------------- generating agents


def test_a_python_agent_is_asked_for_petsc4py_and_its_answer_is_accepted():
    from hpcbench.agents.contract import PYTHON_SYSTEM_PROMPT, SYSTEM_PROMPT, render_user_prompt, system_prompt
    from hpcbench.agents.contract import validate_answer as check

    p = _problems()
    text = render_user_prompt(p["vec-scatter"], "python")
    assert "program in Python with petsc4py" in text and "program in C" not in text
    assert "Languages this problem accepts: C, Python (petsc4py); answer in Python (petsc4py)." in text
    # a C-only problem's prompt is what it was: no language line
    assert "Languages this problem accepts" not in render_user_prompt(p["advection1d"])
    assert system_prompt("python") is PYTHON_SYSTEM_PROMPT and system_prompt("c") is SYSTEM_PROMPT
    assert "petsc4py.init(sys.argv)" in PYTHON_SYSTEM_PROMPT
    got = check({"files": [{"name": "main.py", "content": "print(1)\n"}], "entry": "main.py"})
    assert getattr(got, "entry", None) == "main.py", got


def test_generate_in_python_leaves_out_the_problems_that_accept_only_c():
    from hpcbench.plan.gather import accepting
    from hpcbench.problem import load_problems

    asked, other = accepting(load_problems(None, None), "python")
    assert "vec-scatter" in asked and "rosenbrock" in asked and "advection1d" in other
    out = hpcbench("generate", "--agent", "litellm:m", "--language", "python", "--problems", "advection1d",
                   "--out", "/nonexistent/x", check=False)
    assert out.returncode != 0 and "none of the problems asked accepts it" in out.stderr, out.stderr
