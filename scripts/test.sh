#!/usr/bin/env bash
# Set up (idempotently) and run the test suite: everything by default (CI), or with --fast
# the developer's inner loop: units, shape, config and the stand-ins, without the tests that
# build and run PETSc programs, start the Slurm cluster or run whole campaigns (the `slow`,
# `petsc` and `slurm` markers, pyproject.toml). Other arguments go to pytest.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
fast=0
args=()
for a in "$@"; do
  if [[ "$a" == "--fast" ]]; then fast=1; else args+=("$a"); fi
done
"$ROOT/scripts/setup.sh"
cd "$ROOT"
.venv/bin/ruff check .
.venv/bin/python scripts/typecheck.py  # mypy over the installed module names (see the script)
# pytest-xdist (a dev dependency), each module's tests on one worker and the Slurm cluster's
# modules on one, the longest first (tests/conftest.py pytest_xdist_make_scheduler). Campaigns and
# direct MPI runs of all workers take the machine's core slots, so they never oversubscribe it;
# workers beyond the cores fill the time workers spend waiting (on Slurm's queue, a time limit, a
# sleeping program, another worker's slots): the suite used a third of this 2-core machine's CPU
# with 3 workers. Measured here: 1 per core 20:01, one more 19:38 (and 18:54 the next day), two
# more 16:41 (the whole command; README).
workers=$(( $(nproc) + 2 ))
if (( fast )); then
  exec .venv/bin/python -m pytest -q -n auto --dist loadscope -m "not slow and not slurm and not petsc" "${args[@]}"
fi
exec .venv/bin/python -m pytest -q -n "$workers" --dist loadscope "${args[@]}"
