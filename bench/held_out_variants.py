"""The held-out checks' margins: every valid variant and wrong program of a problem's
validate-checks library, built once, runs the held-out cases of many seeds (as the planner
makes them: case_runs over draw(), each program's own options first) beside the reference, and
each held-out check's deviation is measured in units of its tolerance (1.0 = at the edge).

Prints, per problem and held-out check: the draws, the worst valid deviation / tolerance (with
the variant and seed; over 0.5 means a valid program comes within 2x of failing), and the
nearest wrong program that check sees (the smallest deviation / tolerance it reaches at any
draw among the wrong programs it fails somewhere; with its name). Runs that fail or take longer
than the held-out time limit are listed. Exit 1 where a valid variant fails a held-out check.

    python bench/held_out_variants.py --problems advection1d --seeds 20
    python bench/held_out_variants.py --problems stokes-fieldsplit --seeds 3 --wrong-seeds 1
    python bench/held_out_variants.py --problems advection1d --dump /tmp/adv.json

--generated branch,tol adds the generated mutants of those operators (hpcbench/validation/
mutation) to the wrong programs, named gen:<mutant>: the edge-only class the branch operator
makes is the one a held-out draw can miss.

A check whose tolerance scales with a case's option (CompareCheck.scale) is measured in units of
its tolerance at that case. --dump writes every deviation unscaled, with the case's arguments
(JSON rows: kind, program, seed, args, ranks, check index, deviation in units of the stated
tolerance), to fit such a scale from.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hpcbench.evaluators.metrics.numerical_accuracy import case_factor  # noqa: E402
from hpcbench.evaluators.output_contract import parse_quantities  # noqa: E402
from hpcbench.jobs.build import build_submission  # noqa: E402
from hpcbench.jobs.launch import mpi_env  # noqa: E402
from hpcbench.petsc_env import find_petsc  # noqa: E402
from hpcbench.plan.campaign import CaseRun, case_runs  # noqa: E402
from hpcbench.plan.held_out import draw  # noqa: E402
from hpcbench.problem import (  # noqa: E402
    CompareCheck,
    ProblemBundle,
    applies_to,
    is_held_out,
    load_problems,
    names_held_out,
)
from hpcbench.validation.library import Program, apply_edits, load_library  # noqa: E402
from hpcbench.validation.mutation.generate import all_mutations, write_trees  # noqa: E402

PROBLEMS = ["vec-scatter", "rosenbrock", "robertson", "advection1d", "darcy-dmplex", "cavity-dmstag",
            "poisson3d-mg", "bratu-fold", "elasticity-gamg", "obstacle-vi", "allen-cahn-imex", "stokes-fieldsplit"]


@dataclass
class Worst:
    """One check's margins over the draws."""

    valid: float = 0.0
    valid_at: str = ""
    wrong_min: dict[str, float] = field(default_factory=dict)  # wrong program -> its smallest deviation
    rows: list[dict] = field(default_factory=list)  # every deviation, unscaled (--dump)


def deviation(got: list[float], ref: list[float], chk: CompareCheck) -> float:
    """max_i |got_i - ref_i| / (atol + rtol |ref_i|) (the stated tolerance); inf where the run
    printed something else."""
    if len(got) != len(ref) or any(x != x for x in got):
        return float("inf")
    return max((abs(x - r) / (chk.atol + chk.rtol * abs(r)) for x, r in zip(got, ref, strict=True)), default=0.0)


def build_programs(b: ProblemBundle, root: Path, kinds: tuple[str, ...], operators: tuple[str, ...] = ()
                   ) -> dict[tuple[str, str], tuple[Path, Program]]:
    """(kind, name) -> (binary, program) for the library's programs of `kinds` that compile, and
    the generated mutants of `operators` as wrong programs."""
    lib = load_library(b, "checks")
    assert lib is not None, b.problem.id
    petsc, out = find_petsc(), {}
    drawn = [m for m in all_mutations(b) if m.operator in operators]
    for folder in write_trees(b, drawn, root / "generated"):
        files = sorted(p.name for p in folder.glob("*.c"))
        res = build_submission(folder, files, "main.c", petsc, timeout_s=300)
        if res.exit_code == 0:
            out[("wrong", f"gen:{folder.name}")] = (folder / "app", Program.model_construct(
                name=f"gen:{folder.name}", reason="generated mutant", edits=[], args=[], wrong_where={}))
    for kind in kinds:
        for i, prog in enumerate(getattr(lib, kind)):
            d = root / kind / prog.name
            d.mkdir(parents=True)
            files = apply_edits(b, "checks", prog, f"{kind}[{i}]")
            for name, text in files.items():
                (d / name).write_text(text)
            res = build_submission(d, sorted(n for n in files if n.endswith(".c")), "main.c", petsc, timeout_s=300)
            if res.exit_code == 0:
                out[(kind, prog.name)] = (d / "app", prog)
    return out


def run(binary: Path, args: list[str], ranks: int, timeout: float) -> tuple[dict[str, list[float]] | None, float]:
    cmd = ["mpiexec", "-n", str(ranks), "--oversubscribe", str(binary), *args]
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=binary.parent,
                              env={**os.environ, **mpi_env()})
    except subprocess.TimeoutExpired:
        return None, time.monotonic() - t0
    took = time.monotonic() - t0
    return (parse_quantities(proc.stdout) if proc.returncode == 0 else None), took


def applies(chk: CompareCheck, case: str, names: list[str]) -> bool:
    """Whether a reference_run compare check judges `case` (held-out cases are named held-out-*)."""
    if chk.reference.source != "reference_run":
        return False
    return applies_to(chk, case) and (is_held_out(case) or case in names)


def runs_of(b: ProblemBundle, seeds: range, public: bool) -> list[tuple[int | None, CaseRun]]:
    """(seed, run): each seed's held-out runs, and the published ones once (seed None) if asked."""
    out: list[tuple[int | None, CaseRun]] = []
    if public:
        out += [(None, r) for r in case_runs(b.problem, [], [])]
    for seed in seeds:
        out += [(seed, r) for r in case_runs(b.problem, [], draw(b.problem, seed)) if r.case.startswith("held-out-")]
    return out


def measure(b: ProblemBundle, seeds: range, wrong_seeds: range, root: Path, public: bool,
            operators: tuple[str, ...] = ()) -> tuple[dict[int, Worst], list[str]]:
    """Each reference_run compare check's margins (by its index in checks.json) and the valid
    runs' troubles."""
    names = [c.name for c in b.problem.cases]
    checks = {i: c for i, c in enumerate(b.checks.checks) if isinstance(c, CompareCheck)
              and c.reference.source == "reference_run" and (public or names_held_out(c))}
    programs = build_programs(b, root, ("valid", "wrong") if wrong_seeds else ("valid",), operators)
    ref_bin = next(p for (k, _), (p, prog) in programs.items() if k == "valid" and not prog.edits and not prog.args)
    worst, troubles = {i: Worst() for i in checks}, []
    for seed, case in runs_of(b, seeds, public):
        mine = {i: c for i, c in checks.items() if applies(c, case.case, names)}
        ref, _ = run(ref_bin, case.args, case.ranks, case.time_limit_s * 4)
        if ref is None:
            troubles.append(f"seed {seed} {' '.join(case.args)}: the reference failed")
            continue
        for (kind, name), (binary, prog) in programs.items():
            if kind == "wrong" and (seed not in wrong_seeds if seed is not None else not wrong_seeds):
                continue
            got, took = run(binary, [*prog.args, *case.args], case.ranks, case.time_limit_s * 2)
            at = case.case if seed is None else f"seed {seed}"
            where = f"{name} {at} ({' '.join(case.args)}, {case.ranks} ranks)"
            if kind == "valid" and (got is None or took > case.time_limit_s):
                troubles.append(f"{where}: {'failed' if got is None else f'took {took:.0f} s'}, "
                                f"limit {case.time_limit_s:g} s")
            for i, chk in mine.items():
                dev = float("inf") if got is None else deviation(got.get(chk.quantity, []),
                                                                 ref.get(chk.quantity, []), chk)
                w = worst[i]
                w.rows.append({"kind": kind, "program": name, "seed": seed, "args": case.args,
                               "ranks": case.ranks, "check": i, "deviation": dev})
                dev /= case_factor(chk, case.args)
                if kind == "valid" and dev >= w.valid:
                    w.valid, w.valid_at = dev, where
                elif kind == "wrong":
                    w.wrong_min[name] = min(w.wrong_min.get(name, float("inf")), dev)
    return worst, troubles


def report(pid: str, b: ProblemBundle, worst: dict[int, Worst], draws: int, wrong_draws: int) -> bool:
    """Print the table's rows; True where every valid variant passed every held-out check."""
    ok = True
    for i, w in worst.items():
        chk = b.checks.checks[i]
        assert isinstance(chk, CompareCheck)
        seen = {n: d for n, d in w.wrong_min.items() if d > 1.0 or d == float("inf")}
        near = min(seen.items(), key=lambda kv: kv[1]) if seen else ("-", float("nan"))
        tol = f"rtol {chk.rtol:g} atol {chk.atol:g}" + (
            f" x min(1, ({chk.scale.at:g}/|{chk.scale.option}|)^{chk.scale.power:g})" if chk.scale else "")
        held = names_held_out(chk)
        runs = draws if held else 1
        print(f"  [{i}] {chk.quantity:<14} {','.join(chk.cases) or 'all':<14} {tol:<24} runs {runs:>3}"
              f"  valid worst {w.valid:8.3g} ({w.valid_at})"
              f"  nearest wrong {near[1]:8.3g} ({near[0]}; {len(seen)} of {len(w.wrong_min)} seen,"
              f" {wrong_draws} draws)")
        ok &= w.valid <= 1.0
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--problems", default=",".join(PROBLEMS), help="comma-separated problem ids")
    ap.add_argument("--seeds", type=int, default=20, help="valid variants at seeds 0..N-1")
    ap.add_argument("--wrong-seeds", type=int, default=3, help="wrong programs at seeds 0..N-1")
    ap.add_argument("--public", action="store_true", help="also the published cases' compare checks")
    ap.add_argument("--valid-only", action="store_true", help="no wrong programs (quicker)")
    ap.add_argument("--generated", default="", help="comma-separated mutation operators (branch,tol): "
                    "their generated mutants join the wrong programs")
    ap.add_argument("--dump", type=Path, help="write every deviation, unscaled, as JSON rows here")
    args = ap.parse_args()
    bundles, bad, rows = load_problems(), 0, []
    print(f"load {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="held-out-variants-") as tmp:
        for pid in args.problems.split(","):
            b, t0 = bundles[pid], time.monotonic()
            wrong = range(0 if args.valid_only else args.wrong_seeds)
            worst, troubles = measure(b, range(args.seeds), wrong, Path(tmp) / pid, args.public,
                                      tuple(o for o in args.generated.split(",") if o))
            per = b.problem.held_out.cases if b.problem.held_out else 0
            print(f"{pid}: {args.seeds} seeds, {time.monotonic() - t0:.0f} s, load {os.getloadavg()[0]:.1f}")
            bad += not report(pid, b, worst, args.seeds * per, min(args.wrong_seeds, args.seeds) * per)
            for t in troubles:
                print(f"  ! {t}")
            sys.stdout.flush()
            rows += [{"problem": pid, **r} for w in worst.values() for r in w.rows]
    if args.dump:
        args.dump.write_text(json.dumps(rows))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
