"""The adversarial submissions of tests/test_adversarial_run.py as a submission tree.

Each trick is one program (`<trick>.c` here, as the submission's main.c) built on the
honest Rosenbrock solver in rosenbrock.h; `decoy.h` names files planted outside the
campaign that no part of it may ever read. A trick's control (`controls/<trick>.c`, named
`control_<trick>`) does what the trick does without the trick: it must pass where the trick
fails (tests/test_watched_runs.py). Write the tree by hand to try the tricks on
another checkout:

    python -m tests.adversarial.tree OUT_TREE DECOY_FOLDER
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROBLEM = "rosenbrock"
CANARY = "canary-outside-7c41"
CONTROL = "control_"
# Submission arguments of the tricks that need them (the rest ask for none).
ARGS = {"prefix_args": ["-prefix_push", "x_"]}
# Files of this folder a trick's main.c includes besides rosenbrock.h and decoy.h.
EXTRA_FILES = {"detect_in_hpp": ["watch.hpp"], **{t: ["logview_path.h"] for t in
                                                   ("symlink_logs", "fifo_logs", "huge_xml", "valgrind_detect_argv")},
               **{n: ["watch_signs.h"] for t in ("watched_extra_vec", "watched_cpu_skip_destroy", "unwatched_leak",
                                                            "unwatched_raw_leak")
                  for n in (t, f"{CONTROL}{t}")}}


def tricks() -> list[str]:
    return sorted(p.stem for p in HERE.glob("*.c"))


def controls() -> list[str]:
    return sorted(CONTROL + p.stem for p in (HERE / "controls").glob("*.c"))


def _source(name: str) -> Path:
    return HERE / "controls" / f"{name.removeprefix(CONTROL)}.c" if name.startswith(CONTROL) else HERE / f"{name}.c"


def plant_decoys(folder: Path) -> dict[str, Path]:
    """Files outside every campaign, each holding the canary: another campaign's -log_view
    and another submission's valgrind report, as a program would aim its links at them."""
    folder.mkdir(parents=True, exist_ok=True)
    logview = folder / "other-campaign-log_view.xml"
    logview.write_text('<?xml version="1.0"?><root><petscroot><globalperformance><time><max>1</max></time>'
                       f'</globalperformance><timertree><event><name>{CANARY}</name><time><value>100</value>'
                       '</time></event></timertree></petscroot></root>\n')
    valgrind = folder / "other-submission-valgrind.xml"
    valgrind.write_text('<?xml version="1.0"?><valgrindoutput><protocolversion>4</protocolversion><error>'
                        f'<kind>InvalidRead</kind><what>{CANARY}</what><stack><frame><fn>{CANARY}</fn>'
                        '<file>main.c</file><line>1</line></frame></stack></error></valgrindoutput>\n')
    return {"DECOY_LOGVIEW": logview, "DECOY_VALGRIND": valgrind}


def write_tree(dest: Path, decoys: dict[str, Path], names: list[str] | None = None, agent: str = "adv") -> None:
    """One submission per trick (by default; or per name given, controls among them):
    <dest>/<agent>-<trick>/rosenbrock/1/."""
    decoy_h = "".join(f'#define {k} "{v}"\n' for k, v in decoys.items())
    for name in names or tricks():
        d = dest / f"{agent}-{name.replace('_', '-')}" / PROBLEM / "1"
        d.mkdir(parents=True, exist_ok=True)
        (d / "main.c").write_text(_source(name).read_text())
        (d / "rosenbrock.h").write_text((HERE / "rosenbrock.h").read_text())
        (d / "decoy.h").write_text(decoy_h)
        for extra in EXTRA_FILES.get(name, []):
            (d / extra).write_text((HERE / extra).read_text())
        (d / "submission.json").write_text(json.dumps({
            "problem": PROBLEM, "agent": d.parent.parent.name, "model": "adversarial test program",
            "attempt": "1", "entry": "main.c", "files": ["main.c", "rosenbrock.h", "decoy.h",
                                                         *EXTRA_FILES.get(name, [])],
            "args": ARGS.get(name, [])}))


if __name__ == "__main__":
    out, decoy_dir = Path(sys.argv[1]), Path(sys.argv[2])
    write_tree(out, plant_decoys(decoy_dir), sys.argv[3:] or None)
    print(f"{len(sys.argv[3:]) or len(tricks())} submissions in {out}; decoys in {decoy_dir}")
