#!/usr/bin/env bash
# Set up (idempotently) and run `hpcbench run` on the embedded default.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/setup.sh"
cd "$ROOT"
exec .venv/bin/hpcbench run "$@"
