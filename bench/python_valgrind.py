"""Benchmark: what valgrind memcheck costs on a petsc4py program and how noisy it is (issue 38).

The issue asks for valgrind on Python runs "with Python's allocator switched to malloc
(PYTHONMALLOC=malloc) and a suppression file for the interpreter, or a documented reason why
not". This measures both programs of one problem the way a job's valgrind run starts them
(jobs/job.py Runner.launch): built by jobs/build.build_submission (a .py entry goes to
build_python, whose `app` launcher runs the interpreter), started by the local site's launcher
in the run environment (jobs/launch.run_env) with the project's valgrind prefix
(jobs/valgrind.valgrind_prefix: memcheck, full leak check, PETSc's and Open MPI's suppressions)
and the same program options (-skip_petscrc, -log_view to a file), outside the bwrap sandbox.

Per program it prints the wall of a plain run and of valgrind runs, and what memcheck reported,
read by the project's own parser (jobs/valgrind.read_report): errors by kind, definitely lost
bytes, and how many are attributed to the submission's own code as jobs attribute them (a frame
in its binary; for a Python program in the interpreter, which runs its code, with no MPI frame
inside it). The Python program runs without and then with a suppression file for the
interpreter (--suppressions, by default the one Python jobs use, jobs/python-interpreter.supp:
its and its extension modules' allocations, its uninitialised-value reports) and, with
--generate, with every suppression memcheck proposes (--gen-suppressions=all) written into one
file: what is left and how large a file it takes.

Usage: python bench/python_valgrind.py [--problem rosenbrock] [--case n6] [--suppressions FILE] [--generate]
                                       [--keep DIR]"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hpcbench.jobs.build import build_submission
from hpcbench.jobs.build_python import interpreter_objects
from hpcbench.jobs.instruments import EVERY_RUN
from hpcbench.jobs.launch import launch_argv, run_env
from hpcbench.jobs.launchers import launcher_of, rank_variables
from hpcbench.jobs.records import ValgrindSummary
from hpcbench.jobs.valgrind import PYTHON_SUPPRESSIONS, read_report, valgrind_prefix
from hpcbench.petsc_env import find_petsc
from hpcbench.problem import load_problem
from hpcbench.site import load_site

ROOT = Path(__file__).resolve().parent.parent


def build(src: Path, dest: Path, petsc) -> Path:
    import json

    meta = json.loads((src / "submission.json").read_text())
    shutil.copytree(src, dest)
    got = build_submission(dest, meta["files"], meta["entry"], petsc)
    if got.exit_code != 0:
        raise SystemExit(f"build of {src} failed: {got.stderr[-2000:]}")
    return dest / "app"


def run(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    out = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=3600)
    return time.perf_counter() - t0, out


def report(xml: Path, own: set[str]) -> tuple[ValgrindSummary, int, collections.Counter]:
    s = ValgrindSummary()
    with open(xml, "rb") as f:
        check = read_report(f, own, s)
    kinds = collections.Counter(e.kind for e in s.errors)
    return s, check.counted, kinds


def suppressions(xml: Path) -> list[str]:
    """The suppressions memcheck proposed in an XML report (--gen-suppressions=all), deduplicated."""
    text = xml.read_text(errors="replace")
    found = re.findall(r"<rawtext>\s*<!\[CDATA\[(.*?)\]\]>\s*</rawtext>", text, re.S)
    return sorted(set(found))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problem", default="rosenbrock")
    ap.add_argument("--case", default="n6", help="a published case run at its fewest ranks")
    ap.add_argument("--suppressions", default=str(PYTHON_SUPPRESSIONS),
                    help="a suppression file for the interpreter, tried on the Python program (default: the one "
                         "Python jobs use, jobs/python-interpreter.supp)")
    ap.add_argument("--generate", action="store_true", help="also try every suppression memcheck proposes")
    ap.add_argument("--keep", help="keep the builds, reports and the suppression file here")
    a = ap.parse_args()
    petsc = find_petsc()
    bundle = load_problem(ROOT / "problems" / a.problem)
    case = next(c for c in bundle.problem.cases if c.name == a.case)
    ranks = min(case.ranks)
    launcher = load_site("local").launcher
    rank_vars = rank_variables(launcher_of(launcher))
    work = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="pyvalgrind-"))
    work.mkdir(parents=True, exist_ok=True)
    version = subprocess.run(["valgrind", "--version"], capture_output=True, text=True).stdout.strip()
    print(f"{a.problem} case {case.name} ({' '.join(case.args)}), {ranks} rank(s); load average "
          f"{os.getloadavg()[0]:.1f}; {version}")
    rows = []
    for lang, src in (("C", bundle.reference_dir), ("Python", bundle.folder / "reference-python")):
        app = build(src, work / f"build-{lang}", petsc)
        env = run_env(petsc.env(), launcher)
        own = interpreter_objects() if lang == "Python" else {str(app)}  # as jobs/job.py Runner attributes
        if lang == "Python":
            env["PYTHONMALLOC"] = "malloc"  # every object through malloc, so memcheck sees each one
        logs = work / f"logs-{lang}"
        logs.mkdir(exist_ok=True)
        opts = [*case.args, *EVERY_RUN, "-log_view", f":{logs}/log_view.txt"]
        plain_argv, _ = launch_argv(launcher, ranks, ranks, [str(app), *opts])
        plain = min(run(plain_argv, env, logs)[0] for _ in range(3))
        extra: list[list[str]] = [[]]
        if lang == "Python" and a.suppressions:
            extra.append([f"--suppressions={Path(a.suppressions).resolve()}"])
        if lang == "Python" and a.generate:
            extra.append(["--gen-suppressions=all"])
        for more in extra:
            prefix = valgrind_prefix(logs, petsc.petsc_dir, rank_vars)
            argv, _ = launch_argv(launcher, ranks, ranks, [*prefix, *more, str(app), *opts])
            wall, out = run(argv, env, logs)
            xml = logs / "valgrind.0.xml"
            s, counted, kinds = report(xml, own)
            label = f"{lang}{f' ({more[0]})' if more else ''}"
            rows.append((label, plain, wall, out.returncode, counted, s.definitely_lost_bytes,
                         s.submission_lost_bytes + s.submission_invalid_accesses, dict(kinds.most_common(6))))
            if more == ["--gen-suppressions=all"]:
                supp = suppressions(xml)
                file = work / "python-interpreter.supp"
                file.write_text("\n".join(supp) + "\n")
                prefix = valgrind_prefix(logs, petsc.petsc_dir, rank_vars)
                argv, _ = launch_argv(launcher, ranks, ranks, [*prefix, f"--suppressions={file}", str(app), *opts])
                wall, out = run(argv, env, logs)
                s, counted, kinds = report(xml, own)
                rows.append((f"Python (with the {len(supp)} generated suppressions, "
                             f"{file.stat().st_size} bytes)", plain, wall, out.returncode, counted,
                             s.definitely_lost_bytes, s.submission_lost_bytes + s.submission_invalid_accesses,
                             dict(kinds.most_common(6))))
            xml.rename(logs / f"valgrind-{len(rows)}.xml")
    print("| program | plain s (best of 3) | valgrind s | x plain | exit | errors | definitely lost B | "
          "the submission's | kinds |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, plain, wall, rc, counted, lost, own, kinds in rows:
        print(f"| {label} | {plain:.2f} | {wall:.1f} | {wall / plain:.0f} | {rc} | {counted} | {lost} | {own} | "
              f"{kinds} |")
    c_vg = next(r[2] for r in rows if r[0] == "C")
    py_vg = next(r[2] for r in rows if r[0] == "Python")
    print(f"\nPython's valgrind run / C's: {py_vg / c_vg:.1f}x; work folder {work}")
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
