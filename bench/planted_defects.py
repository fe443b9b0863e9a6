"""Planted defects: does the test suite still catch what it caught?

Each defect is one edit of the product's source (a gate that passes what it should fail, a
check whose tolerance is lost, a store that forgets, a packing that puts runs on one core, a
CLI that exits 0 on failure, ...), applied in a checkout, followed by the test modules that
should catch it; the failing tests are listed, then the edit is undone. Run it on the checkout
before a change and on the checkout after (each with its own venv: scripts/setup.sh), with the
same defects, and compare: a defect caught before and not after is a test the change lost.

    python bench/planted_defects.py --checkout /work/baseline --json before.json
    python bench/planted_defects.py --checkout /work/main --json after.json
    python bench/planted_defects.py --compare before.json after.json

A defect whose text is not found in a checkout is reported as such (the code moved): pick the
edit so that it applies to both versions."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Defect:
    name: str
    area: str  # gates | checks | store | packing | cli | planning
    file: str
    find: str
    replace: str
    tests: tuple[str, ...]  # test files (or node ids) that should catch it


SAMPLE_FLAWS = "tests/test_end_to_end.py::test_each_sample_flaw_is_caught_by_its_gate"
DEFECTS = [
    Defect("a failed build passes the compilation gate", "gates", "evaluators/gates/compilation.py",
           "if b.exit_code == 0:", "if b.exit_code in (0, 2):", (SAMPLE_FLAWS,)),
    Defect("leaks pass the memory gate", "gates", "evaluators/gates/memory_safety.py",
           "    if not leaks:\n", "    if True:\n", (SAMPLE_FLAWS,)),
    Defect("a run stopped at its time limit passes the execution gate", "gates", "evaluators/gates/execution.py",
           "if r.exit_code == 0 and not r.timed_out:", "if r.exit_code == 0 or r.timed_out:",
           ("tests/test_validate_checks.py::test_a_program_that_hangs_costs_one_case_not_every_case",)),
    Defect("a compare check 100 times looser than its tolerance", "checks", "evaluators/metrics/numerical_accuracy.py",
           "ratio = abs(x - r) / (chk.atol + chk.rtol * abs(r))",
           "ratio = abs(x - r) / (chk.atol + 100 * chk.rtol * abs(r))",
           ("tests/test_units.py", "tests/test_accuracy_held_out.py")),
    Defect("a case counts at its best rank count, not its worst", "checks", "evaluators/metrics/numerical_accuracy.py",
           "worst[case] = min(s, worst.get(case, 1.0))", "worst[case] = max(s, worst.get(case, 0.0))",
           ("tests/test_validate_checks.py", "-m", "not petsc", "tests/test_accuracy_held_out.py")),
    Defect("a scoring overwrites an earlier one of the same id", "store", "hpcbench/store/scorings.py",
           "    if final.exists():\n        raise FileExistsError", "    if False:\n        raise FileExistsError",
           ("tests/test_store.py",)),
    Defect("collect keeps the rows of a record that changed", "store", "hpcbench/store/collect.py",
           "    if old is not None and old[1] == fp:", "    if old is not None:", ("tests/test_store.py",)),
    Defect("every run of a machine is given core 0", "packing", "jobs/slots.py",
           'cores = [self.layout["cores"][int(Path(fh.name).name[4:]) % n] for fh in held]',
           'cores = [self.layout["cores"][0] for fh in held]', ("tests/test_slots.py", "tests/test_binding.py")),
    Defect("a job wider than a node is packed onto one node", "packing", "hpcbench/executors/pack.py",
           "nodes = max(-(-j.width // rpn) for j in members) if rpn else 1", "nodes = 1", ("tests/test_pack.py",)),
    Defect("score exits 0 when a problem was not scored", "cli", "hpcbench/cli/score.py",
           "    if why:\n        sys.exit(1)", "    if why:\n        pass",
           ("tests/test_inputs.py::test_score_exits_nonzero_naming_the_problem_without_a_reference",)),
    Defect("an unknown field in an input file is ignored", "cli", "hpcbench/strict.py",
           'extra="forbid", allow_inf_nan=False', 'extra="ignore", allow_inf_nan=False',
           ("tests/test_units.py", "tests/test_bad_inputs.py")),
    Defect("the held-out draw ignores its seed", "planning", "hpcbench/plan/held_out.py",
           'rng = random.Random(f"{seed}:{problem.id}")', "rng = random.Random(problem.id)",
           ("tests/test_held_out.py", "-m", "not slow and not petsc")),
]


def apply(root: Path, d: Defect) -> str | None:
    """Plant `d`; the file's text before, or None where its `find` is not there exactly once."""
    path = root / d.file
    text = path.read_text()
    if text.count(d.find) != 1:
        return None
    path.write_text(text.replace(d.find, d.replace))
    return text


def failing(root: Path, tests: tuple[str, ...], timeout_s: float) -> tuple[list[str], float, str]:
    """The tests of `tests` that fail in `root` (its own venv), the wall time, and how it ended."""
    py = root / ".venv" / "bin" / "python"
    t0 = time.perf_counter()
    try:
        p = subprocess.run([str(py), "-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider", "-p", "no:randomly",
                            "-o", "addopts=", *tests], cwd=root, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return [], time.perf_counter() - t0, "timed out"
    failed = sorted(set(re.findall(r"^(?:FAILED|ERROR) (\S+)", p.stdout, re.M)))
    tail = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else p.stderr[-200:]
    return failed, time.perf_counter() - t0, tail


def run(root: Path, only: set[str] | None, timeout_s: float) -> list[dict]:
    out = []
    for d in DEFECTS:
        if only and d.name not in only:
            continue
        before = apply(root, d)
        if before is None:
            out.append({"defect": d.name, "area": d.area, "applied": False, "failed": [], "wall_s": 0.0,
                        "summary": f"{d.find!r} is not in {d.file} exactly once"})
            continue
        try:
            failed, wall, tail = failing(root, d.tests, timeout_s)
        finally:
            (root / d.file).write_text(before)
        out.append({"defect": d.name, "area": d.area, "applied": True, "failed": failed, "wall_s": round(wall, 1),
                    "summary": tail})
        print(f"{d.area:9s} {d.name}: {'CAUGHT by ' + str(len(failed)) if failed else 'NOT CAUGHT'} "
              f"({wall:.0f} s) {tail}", flush=True)
    return out


def compare(before: list[dict], after: list[dict]) -> str:
    rows = ["| area | defect | caught before (tests) | caught after (tests) |", "|---|---|---|---|"]
    a = {x["defect"]: x for x in after}
    for b in before:
        x = a.get(b["defect"], {})

        def cell(r: dict) -> str:
            if not r:
                return "not run"
            if not r["applied"]:
                return "not applied"
            return (f"yes ({len(r['failed'])}): " + ", ".join(t.split("::")[-1] for t in r["failed"][:3])
                    + (" ..." if len(r["failed"]) > 3 else "")) if r["failed"] else "NO"
        rows.append(f"| {b['area']} | {b['defect']} | {cell(b)} | {cell(x)} |")
    return "\n".join(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkout", type=Path, help="a checkout with its own .venv (scripts/setup.sh)")
    ap.add_argument("--only", help="comma-separated defect names")
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="two --json results side by side")
    a = ap.parse_args()
    if a.compare:
        print(compare(*(json.loads(Path(p).read_text()) for p in a.compare)))
        return 0
    if a.checkout is None:
        ap.error("--checkout or --compare")
    results = run(a.checkout.resolve(), set(a.only.split(",")) if a.only else None, a.timeout)
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))
    return 0 if all(r["failed"] for r in results if r["applied"]) else 1


if __name__ == "__main__":
    sys.exit(main())
