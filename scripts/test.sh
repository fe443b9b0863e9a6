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
if (( fast )); then
  # on every core (pytest-xdist, a dev dependency): these tests share no cluster, cores or clock
  exec .venv/bin/python -m pytest -q -n auto -m "not slow and not slurm and not petsc" "${args[@]}"
fi
exec .venv/bin/python -m pytest -q "${args[@]}"
