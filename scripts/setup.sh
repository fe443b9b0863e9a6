#!/usr/bin/env bash
# One idempotent set-up for hpcbench on Debian/Ubuntu: system prerequisites
# (only when missing), a virtual environment in .venv, PETSc 3.26.1 from
# PyPI's sdist (built once, reused afterwards), and hpcbench itself.
#
# Other systems: provide a C compiler, make, an MPI (mpicc/mpiexec), BLAS/LAPACK
# and optionally valgrind, then run this script; it skips what is present.
#
# Environment:
#   HPCBENCH_VENV            where the venv lives (default: <repo>/.venv)
#   HPCBENCH_PETSC=pypi|none pypi (default) builds PETSc into the venv; none
#                            relies on PETSC_DIR/PETSC_ARCH given by the user
#   HPCBENCH_WITH_PETSC4PY=1 also builds petsc4py against that same PETSc
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${HPCBENCH_VENV:-$ROOT/.venv}"
PETSC_VERSION=3.26.1
PETSC_MODE="${HPCBENCH_PETSC:-pypi}"

log() { printf '[setup] %s\n' "$*" >&2; }

# --- system prerequisites -------------------------------------------------
missing=()
command -v cc >/dev/null || missing+=(build-essential)
command -v make >/dev/null || missing+=(make)
command -v mpicc >/dev/null || missing+=(libopenmpi-dev openmpi-bin)
command -v valgrind >/dev/null || missing+=(valgrind)
# the sandbox around every build and run of an untrusted program (docs/security.md)
command -v bwrap >/dev/null || missing+=(bubblewrap)
# the security tests run a sandboxed step as `nobody` through setpriv
command -v setpriv >/dev/null || missing+=(util-linux)
# headless Chromium: the tests render the HTML report in it
command -v chromium >/dev/null || command -v chromium-browser >/dev/null || missing+=(chromium)
command -v pkg-config >/dev/null || missing+=(pkg-config)
if ! ldconfig -p 2>/dev/null | grep -q 'liblapack\.so'; then missing+=(liblapack-dev libblas-dev); fi
if [ ${#missing[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    log "installing system packages: ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    log "missing system prerequisites (${missing[*]}) and no apt-get: install them by hand"
    exit 1
  fi
fi

# --- Python environment ---------------------------------------------------
if [ ! -x "$VENV/bin/python" ]; then
  log "creating virtual environment $VENV"
  python3 -m venv "$VENV"
fi
PY="$VENV/bin/python"
"$PY" -m pip install -q --upgrade pip setuptools wheel >/dev/null

# --- PETSc ------------------------------------------------------------------
if [ "$PETSC_MODE" = "pypi" ]; then
  have=$("$PY" -c 'import importlib.metadata as m; print(m.version("petsc"))' 2>/dev/null || true)
  if [ "$have" != "$PETSC_VERSION" ]; then
    log "building PETSc $PETSC_VERSION from PyPI's sdist (about 4 minutes on 2 cores)"
    # Debugging off: timings must reflect the program, and -malloc_debug still
    # turns on PETSc's tracing allocator at run time for the memory gate.
    PETSC_CONFIGURE_OPTIONS="${PETSC_CONFIGURE_OPTIONS:---with-debugging=0 --with-fc=0 --with-x=0 --with-cuda=0 --with-hip=0}" \
      "$PY" -m pip install -q --no-binary petsc "petsc==$PETSC_VERSION"
  fi
  if [ "${HPCBENCH_WITH_PETSC4PY:-0}" = "1" ]; then
    have4=$("$PY" -c 'import importlib.metadata as m; print(m.version("petsc4py"))' 2>/dev/null || true)
    if [ "$have4" != "$PETSC_VERSION" ]; then
      log "building petsc4py $PETSC_VERSION against the PETSc in the venv"
      "$PY" -m pip install -q cython numpy
      # No build isolation: otherwise pip builds a second PETSc for petsc4py.
      PETSC_DIR="$("$PY" -c 'import petsc; print(petsc.get_petsc_dir())')" PETSC_ARCH="" \
        "$PY" -m pip install -q --no-build-isolation "petsc4py==$PETSC_VERSION"
    fi
  fi
fi

# PETSc's own tutorials are not installed with PETSc; `hpcbench lint` is tested on
# them from the sdist, kept here once (pip's cache makes this quick after the build).
SDIST_CACHE="$VENV/hpcbench-cache"
if [ "$PETSC_MODE" = "pypi" ] && [ ! -f "$SDIST_CACHE/petsc-$PETSC_VERSION.tar.gz" ]; then
  mkdir -p "$SDIST_CACHE"
  "$PY" -m pip download -q --no-binary :all: --no-deps "petsc==$PETSC_VERSION" -d "$SDIST_CACHE" >/dev/null \
    || log "could not fetch the petsc sdist now; the lint tests fetch it when they run"
fi

# --- Spack's package recipes (tests/test_spack_envs.py checks spack/<site>/spack.yaml against them)
# The spack/spack-packages repository at a pinned commit, only where GitHub can be reached (it
# cannot from every machine: then the recipe tests are reported as skipped, not run).
SPACK_PACKAGES_COMMIT=1e8cf059e35d55c4fe1142fed41785bedf6c7246
SPACK_PACKAGES="$VENV/spack-packages"
if [ "$(cat "$SPACK_PACKAGES/COMMIT" 2>/dev/null)" != "$SPACK_PACKAGES_COMMIT" ]; then
  tmp="$(mktemp -d)"
  if curl -fsSL --max-time 300 -o "$tmp/sp.tar.gz" \
      "https://codeload.github.com/spack/spack-packages/tar.gz/$SPACK_PACKAGES_COMMIT" 2>/dev/null; then
    rm -rf "$SPACK_PACKAGES" && mkdir -p "$SPACK_PACKAGES"
    tar -xzf "$tmp/sp.tar.gz" -C "$SPACK_PACKAGES" --strip-components=1 \
      "spack-packages-$SPACK_PACKAGES_COMMIT/repos/spack_repo/builtin" \
      && echo "$SPACK_PACKAGES_COMMIT" > "$SPACK_PACKAGES/COMMIT"
  else
    log "spack-packages not reachable (GitHub): the Spack environment recipe tests will be skipped"
  fi
  rm -rf "$tmp"
fi

# --- mpi4py (the machine baseline: hpcbench/machine_baseline.py) --------------
# Built from source with this machine's mpicc, so it uses the MPI the programs use; where
# no sdist is reachable, the binary wheel (mpi4py >= 4 loads the system's libmpi at run time).
if ! "$PY" -c 'import mpi4py' 2>/dev/null; then
  log "installing mpi4py against $(command -v mpicc)"
  MPICC="$(command -v mpicc)" "$PY" -m pip install -q --no-binary mpi4py "mpi4py>=3.1" 2>/dev/null \
    || "$PY" -m pip install -q "mpi4py>=3.1"
fi

# --- hpcbench ---------------------------------------------------------------
"$PY" -m pip install -q -e "$ROOT[dev]"
log "ready: $VENV/bin/hpcbench"
