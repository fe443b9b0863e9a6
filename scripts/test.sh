#!/usr/bin/env bash
# Set up (idempotently) and run the whole test suite.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/setup.sh"
cd "$ROOT"
.venv/bin/ruff check .
.venv/bin/python scripts/typecheck.py  # mypy over the installed module names (see the script)
exec .venv/bin/python -m pytest -q "$@"
