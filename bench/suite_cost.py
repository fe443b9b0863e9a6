"""Where the test suite's machine time goes: every campaign a suite run left behind, its builds'
and runs' core-seconds (a run's wall time x its ranks; what the suite's shared core slots
serialise on this 2-core machine), by test and by kind of run.

Run the suite keeping its session (the shared campaigns) and read it with pytest's base temp:

    HPCBENCH_KEEP_TEST_SESSION=1 HPCBENCH_TEST_SESSION=/tmp/suite-s bash scripts/test.sh --basetemp=/tmp/suite-t
    .venv/bin/python bench/suite_cost.py /tmp/suite-s /tmp/suite-t [--top 40]

A campaign is a folder holding campaign.json and records/; it is charged to the test folder it
lies in (pytest names tmp_path after the test) or, in the session, to the shared campaign. A
record seen in several places (a test's copy of a shared campaign; records multiplied under new
names to make a big store) is counted once, where it ran: the session's campaign first, else the
first folder in name order."""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path


def campaigns(root: Path) -> list[Path]:
    found = {p.parent.parent for p in root.rglob("records/*.json")}
    return sorted(c for c in found if (c / "campaign.json").is_file())


def owner(camp: Path, root: Path) -> str:
    parts = camp.relative_to(root).parts
    test = next((p for p in parts if p.startswith("test_")), None)
    return test or "session:" + next((p for p in parts if not p.startswith("popen-gw")), parts[0])


def kind_of(run: dict) -> str:
    case = str(run.get("case", ""))
    if run.get("kind") == "valgrind" or run.get("valgrind"):
        return "valgrind"
    if case.startswith("held"):
        return "held-out"
    if run.get("kind") == "performance" or case.startswith("perf"):
        return "performance"
    return str(run.get("kind", "?"))


def records(camp: Path) -> list[tuple[tuple, collections.Counter]]:
    """Each record's identity (when its build and runs started: a copy keeps them) and cost."""
    out = []
    for f in (camp / "records").glob("*.json"):
        try:
            rec = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        c: collections.Counter = collections.Counter()
        b = rec.get("build") or {}
        if not b.get("cached"):
            c["build"] += float(b.get("wall_s") or 0)
        runs = rec.get("runs") or []
        for r in runs:
            c[kind_of(r)] += float(r.get("wall_s") or 0) * int(r.get("ranks") or 1)
        c["jobs"] += 1
        out.append(((b.get("started_at"), tuple(r.get("started_at") for r in runs)), c))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("roots", nargs="+", type=Path)
    ap.add_argument("--top", type=int, default=40)
    a = ap.parse_args()
    by_test: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    total: collections.Counter = collections.Counter()
    seen: dict[tuple, tuple[str, collections.Counter]] = {}
    for root in a.roots:
        for camp in campaigns(root):
            name = owner(camp, root)
            for key, c in records(camp):
                had = seen.get(key)
                if had is None or (name.startswith("session:") and not had[0].startswith("session:")):
                    seen[key] = (name, c)
    for name, c in seen.values():
        by_test[name] += c
        total += c
    kinds = sorted(k for k in total if k != "jobs")
    print(f"{'core-s':>8} {'jobs':>5} " + " ".join(f"{k[:11]:>11}" for k in kinds) + "  test or shared campaign")
    rows = sorted(by_test.items(), key=lambda kv: -sum(v for k, v in kv[1].items() if k != "jobs"))
    for name, c in rows[:a.top] + [("TOTAL", total)]:
        s = sum(v for k, v in c.items() if k != "jobs")
        print(f"{s:8.0f} {c['jobs']:5d} " + " ".join(f"{c[k]:11.0f}" for k in kinds) + f"  {name}")


if __name__ == "__main__":
    main()
