"""The bad-input table of tests/test_bad_inputs.py, run against any hpcbench: each case's exit
status, whether a traceback or a hang came out, whether the expected words did, and the last
line it printed. With --before, the same cases against another checkout's hpcbench (main, to
fill the "before" column), laid out in a folder of its own so its code is used whole (pip
--target maps jobs/ and evaluators/ into the package; the data folders beside it are found as
in a checkout, hpcbench/resources.py):

    python bench/bad_inputs.py                                    # this checkout
    git archive main | tar -x -C /tmp/main-src
    pip install --no-deps --target /tmp/main-pkg /tmp/main-src
    mkdir /tmp/main-run && cp -a /tmp/main-pkg/hpcbench /tmp/main-run/
    for x in problems site-configs examples probes pyproject.toml; do ln -s /tmp/main-src/$x /tmp/main-run/; done
    cd /tmp && python bench/bad_inputs.py --before /tmp/main-run --markdown /tmp/bad.md
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.test_bad_inputs import CASES, make_campaigns, run_case  # noqa: E402


def outcome(case, root: Path, campaigns) -> str:
    try:
        p = run_case(case, root / case.id, campaigns, timeout=120)
    except subprocess.TimeoutExpired:
        return "HANG (no exit in 120 s)"
    out = p.stdout + p.stderr
    if "Traceback" in out:
        last = [ln for ln in out.splitlines() if ln.strip()][-1][:110]
        return f"exit {p.returncode}, TRACEBACK: {last}"
    said = all(w.replace("{t}", str(root / case.id)) in out for w in case.words)
    verdict = "clear" if p.returncode == case.rc and said else (
        "silently wrong" if p.returncode == 0 and case.rc else "unclear")
    last = next((ln for ln in reversed(out.splitlines()) if ln.strip() and not ln.startswith(("#", "jobs:"))), "")
    return f"exit {p.returncode}, {verdict}: {last.strip()[:110]}"


def table(before: str | None) -> list[tuple[str, bool, str]]:
    if before:
        os.environ["PYTHONPATH"] = before
        os.environ["HPCBENCH_CMD"] = f"{shlex.quote(sys.executable)} -c 'from hpcbench.cli import main; main()'"
    root = Path(tempfile.mkdtemp(prefix="bad-inputs-"))
    campaigns = make_campaigns(root / "campaigns")
    return [(c.id, c.known, outcome(c, root / "cases", campaigns)) for c in CASES]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", help="a folder holding another hpcbench installed with pip --target")
    ap.add_argument("--markdown", help="also write the table here")
    args = ap.parse_args()
    rows = table(args.before)
    lines = ["| case | issue's | outcome |", "|---|---|---|"]
    lines += [f"| {cid} | {'yes' if known else ''} | {text.replace('|', '/')} |" for cid, known, text in rows]
    print("\n".join(lines))
    if args.markdown:
        Path(args.markdown).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
