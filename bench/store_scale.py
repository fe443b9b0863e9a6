"""Benchmark: the campaign store at scale (collect, re-collect, incremental
collect, deterministic score, report) at 1,000 and 10,000 submissions.

The campaigns are SYNTHETIC: they REPLICATE the staged submissions and the job
records of one real campaign (by default the one `hpcbench run` writes with no
arguments), with agents renamed `<agent>-rNNNN` and a distinct trailing comment
in every C source (so the parser cache cannot turn replicas into free hits).
Nothing is run again: the records are the real records of the seed campaign.

For each size N it builds N submissions plus 100 held back, then runs the CLI
(each step a fresh process) and prints wall seconds and peak RSS per step:

  collect            N submissions into an empty store
  collect again      the same campaign, unchanged
  collect +100       after 100 new submissions and records arrived
  score              `hpcbench score` (deterministic evaluators, no judge)
  report json        `hpcbench report --format json`

and the sizes of the campaign's store files (campaign.h5 and scorings) and of
records/. Wall times on a shared machine are noisy (the CPU seconds of the
process, user + system, much less so): compare figures from one run.

Usage: python bench/store_scale.py SEED_CAMPAIGN [--sizes 1000 10000]
       [--hpcbench "python -m hpcbench.cli"] [--keep DIR]
`--hpcbench` runs another checkout (e.g. `env PYTHONPATH=/old python -c
'from hpcbench.cli import main; main()'`) for before/after figures."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hpcbench.plan import staging

HELD_BACK = 100
_SKIP = {"submissions", "records", "specs", "work", "report", "campaign.h5", "scores", "generated"}


def _seed_units(seed: Path) -> list[tuple[Path, Path | None]]:
    """(submission folder, its record or None) of every staged submission of the seed."""
    out = []
    for meta in sorted(seed.glob("submissions/*/*/*/submission.json")):
        sub = meta.parent
        agent, problem, attempt = sub.parts[-3:]
        rec = seed / "records" / f"{agent}__{problem}__{attempt}.json"
        out.append((sub, rec if rec.is_file() else None))
    if not out:
        raise SystemExit(f"{seed}: no staged submissions to replicate")
    return out


def _first(text: str, field: str, value: str) -> str:
    return re.sub(rf'"{field}": "[^"]*"', f'"{field}": {json.dumps(value)}', text, count=1)


def _restage(folder: Path) -> None:
    """New sha256s for an edited replica (as planning would have taken them), so that
    collect's staging check passes it like the submission it stands for."""
    path = folder / staging.MANIFEST
    if not path.is_file():
        return
    man = json.loads(path.read_text())
    man["sha256"] = {name: staging.sha256((folder / name).read_bytes()) for name in man["sha256"]}
    path.write_text(json.dumps(man, indent=1))


def build(seed: Path, dst: Path, n: int) -> tuple[int, list[tuple[Path, Path | None]]]:
    """A campaign folder of >= n replicated submissions; returns (count, held-back units)."""
    units = _seed_units(seed)
    for p in seed.iterdir():
        if p.name in _SKIP or p.name.startswith("."):
            continue
        (shutil.copytree if p.is_dir() else shutil.copyfile)(p, dst / p.name)
    (dst / "records").mkdir()
    (dst / "submissions").mkdir()
    held = dst.parent / f"{dst.name}-held"
    (held / "records").mkdir(parents=True)
    (held / "submissions").mkdir()
    total = n + HELD_BACK
    agents = set()
    k = made = 0
    # Each problem's reference stays as it is, once: without it every problem of the replica
    # is "no reference: not scored" and scoring would measure nothing.
    for sub, rec in units:
        if sub.parts[-3] == "reference":
            shutil.copytree(sub, dst / "submissions" / Path(*sub.parts[-3:]))
            if rec is not None:
                shutil.copyfile(rec, dst / "records" / rec.name)
            agents.add("reference")
            made += 1
    while made < total:
        k += 1
        for sub, rec in units:
            if made >= total:
                break
            root = dst if made < n else held
            agent, problem, attempt = sub.parts[-3:]
            new_agent = f"{agent}-r{k:04d}"
            agents.add(new_agent)
            out = root / "submissions" / new_agent / problem / attempt
            shutil.copytree(sub, out)
            meta = json.loads((out / "submission.json").read_text())
            meta["agent"] = new_agent
            (out / "submission.json").write_text(json.dumps(meta, indent=1))
            for c in out.rglob("*"):
                if c.suffix in (".c", ".h") and c.is_file():
                    c.write_text(c.read_text(errors="replace") + f"\n/* replica {k} */\n")
            _restage(out)
            if rec is not None:
                text = rec.read_text()
                text = _first(_first(text, "job_id", f"{new_agent}__{problem}__{attempt}"), "agent", new_agent)
                (root / "records" / f"{new_agent}__{problem}__{attempt}.json").write_text(text)
            made += 1
    m = json.loads((dst / "campaign.json").read_text())
    m["agents"] = sorted(agents)
    (dst / "campaign.json").write_text(json.dumps(m, indent=1))
    return n, [(p, None) for p in (held / "submissions").glob("*")] + [(held / "records", None)]


def _merge_held(dst: Path) -> None:
    held = dst.parent / f"{dst.name}-held"
    for agent in (held / "submissions").iterdir():
        shutil.copytree(agent, dst / "submissions" / agent.name, dirs_exist_ok=True)
    for rec in (held / "records").iterdir():
        shutil.copyfile(rec, dst / "records" / rec.name)


def compact_seed(seed: Path, dst: Path) -> Path:
    from hpcbench.jobs.records import JobResult, compact, save_model

    shutil.copytree(seed, dst, ignore=shutil.ignore_patterns("work", "report", "campaign.h5", "scores"))
    for rec in (dst / "records").glob("*.json"):
        save_model(rec, compact(JobResult.model_validate_json(rec.read_bytes())))
    return dst


def timed(cmd: list[str]) -> tuple[float, float, float, str]:
    """(wall s, CPU s (user + system), peak RSS MiB, stdout tail) of one CLI process."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = p.stdout.read() if p.stdout else ""
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}):\n{out[-3000:]}")
    cpu = usage.ru_utime + usage.ru_stime  # its worker processes (score) are included
    return wall, cpu, usage.ru_maxrss / 1024, out.strip().splitlines()[-1] if out.strip() else ""


def _size(p: Path) -> int:
    if p.is_file():
        return p.stat().st_size
    return sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) if p.is_dir() else 0


def store_bytes(camp: Path) -> int:
    """campaign.h5, its sidecar files, scorings and the judge cache: what collect and score write."""
    names = ["campaign.h5", "scores", "judge_cache.jsonl"]
    return sum(_size(camp / n) for n in names) + sum(_size(p) for p in camp.glob("campaign.h5.*"))


def run_size(seed: Path, work: Path, n: int, cli: list[str]) -> list[str]:
    camp = work / f"c{n}"
    camp.mkdir()
    t0 = time.perf_counter()
    build(seed, camp, n)
    lines = [f"== {n} submissions (replicated from {seed} in {time.perf_counter() - t0:.0f} s; "
             f"records/ {_size(camp / 'records') / 2**20:.0f} MiB)"]

    def step(name: str, args: list[str]) -> None:
        wall, cpu, rss, tail = timed([*cli, *args])
        lines.append(f"  {name:14s} {wall:8.2f} s wall {cpu:8.2f} s CPU  peak RSS {rss:7.0f} MiB   {tail[:90]}")
        print(lines[-1], flush=True)

    print(lines[0], flush=True)
    step("collect", ["collect", str(camp)])
    step("collect again", ["collect", str(camp)])
    _merge_held(camp)
    step("collect +100", ["collect", str(camp)])
    step("score", ["score", str(camp)])
    step("report json", ["report", str(camp), "--format", "json", "--out", str(work / f"r{n}.json")])
    lines.append(f"  campaign.h5 {_size(camp / 'campaign.h5') / 2**20:9.1f} MiB; store files in all "
                 f"{store_bytes(camp) / 2**20:9.1f} MiB (n={n + HELD_BACK})")
    print(lines[-1], flush=True)
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("seed", type=Path, help="a real campaign folder (submissions/ and records/)")
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--hpcbench", default=f"{sys.executable} -c 'from hpcbench.cli import main; main()'",
                    help="command that runs the hpcbench CLI (default: this interpreter's hpcbench)")
    ap.add_argument("--keep", type=Path, help="build the campaigns here and keep them")
    ap.add_argument("--compact-seed", action="store_true",
                    help="first rewrite the seed's records as jobs of this version write them "
                         "(hpcbench.jobs.records.compact: -log_view events of instrumented runs only)")
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="hpcbench-store-"))
    work.mkdir(parents=True, exist_ok=True)
    cli = shlex.split(args.hpcbench)
    ver = subprocess.run([*cli, "--version"], capture_output=True, text=True).stdout.strip()
    print(f"SYNTHETIC campaigns replicated from the real records of {args.seed}; CLI: {args.hpcbench} ({ver})")
    seed = args.seed.resolve()
    if args.compact_seed:
        seed = compact_seed(seed, work / "seed-compact")
        print(f"seed records compacted into {seed} (as jobs now write them)")
    out = []
    try:
        for n in args.sizes:
            out += run_size(seed, work, n, cli)
            if not args.keep:
                shutil.rmtree(work / f"c{n}", ignore_errors=True)
                shutil.rmtree(work / f"c{n}-held", ignore_errors=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("\n".join(["", "summary:", *out]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
