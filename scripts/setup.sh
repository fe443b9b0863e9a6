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
petsc4py_loads_ours() {  # petsc4py imports and the libpetsc it loads is the venv's PETSc's
  "$PY" - 2>/dev/null <<'EOF'
import os, sys
import petsc, petsc4py
petsc4py.init([])
from petsc4py import PETSc  # noqa: F401
want = os.path.realpath(os.path.join(petsc.get_petsc_dir(), "lib"))
loaded = {os.path.dirname(os.path.realpath(line.split()[-1])) for line in open("/proc/self/maps") if "libpetsc.so" in line}
sys.exit(0 if loaded == {want} else 1)
EOF
}
if [ "$PETSC_MODE" = "pypi" ]; then
  have=$("$PY" -c 'import importlib.metadata as m; print(m.version("petsc"))' 2>/dev/null || true)
  if [ "$have" != "$PETSC_VERSION" ]; then
    log "building PETSc $PETSC_VERSION from PyPI's sdist (about 4 minutes on 2 cores)"
    # Debugging off: timings must reflect the program, and -malloc_debug still
    # turns on PETSc's tracing allocator at run time for the memory gate.
    PETSC_CONFIGURE_OPTIONS="${PETSC_CONFIGURE_OPTIONS:---with-debugging=0 --with-fc=0 --with-x=0 --with-cuda=0 --with-hip=0}" \
      "$PY" -m pip install -q --no-binary petsc "petsc==$PETSC_VERSION"
  fi
  # petsc4py: Python submissions run on it (docs/python.md). Its extension finds libpetsc through
  # $ORIGIN first, so a wheel from pip's cache built in another virtual environment loads this
  # one's PETSc; the check below says which libpetsc it loads, and rebuilds where it is not ours.
  if ! petsc4py_loads_ours; then
    log "installing petsc4py $PETSC_VERSION against the PETSc in the venv (a wheel pip cached, else built: 5-7 minutes on 2 cores)"
    "$PY" -m pip install -q cython numpy
    # No build isolation: otherwise pip builds a second PETSc for petsc4py.
    PETSC_DIR="$("$PY" -c 'import petsc; print(petsc.get_petsc_dir())')" PETSC_ARCH="" \
      LDFLAGS="${LDFLAGS:-} -Wl,-rpath,\$ORIGIN/../../petsc/lib" \
      "$PY" -m pip install -q --no-build-isolation --force-reinstall --no-deps "petsc4py==$PETSC_VERSION"
    if ! petsc4py_loads_ours; then
      # a wheel cached before petsc4py was built so: dropped, and built again (cached this time)
      log "petsc4py from pip's cache loads another PETSc: rebuilding it"
      "$PY" -m pip cache remove petsc4py >/dev/null 2>&1 || true
      PETSC_DIR="$("$PY" -c 'import petsc; print(petsc.get_petsc_dir())')" PETSC_ARCH="" \
        LDFLAGS="${LDFLAGS:-} -Wl,-rpath,\$ORIGIN/../../petsc/lib" \
        "$PY" -m pip install -q --no-build-isolation --force-reinstall --no-deps "petsc4py==$PETSC_VERSION"
      petsc4py_loads_ours || { log "petsc4py does not load this venv's PETSc"; exit 1; }
    fi
  fi
  # its record of where PETSc is (petsc4py.get_config) names this venv's, not the one it was built in
  "$PY" - <<'EOF'
import pathlib, petsc, petsc4py
cfg = pathlib.Path(petsc4py.__file__).parent / "lib" / "petsc.cfg"
cfg.write_text(f"PETSC_DIR  = {petsc.get_petsc_dir()}\nPETSC_ARCH = \n")
EOF
else
  log "HPCBENCH_PETSC=none: Python submissions need petsc4py built against $PETSC_DIR (pip install petsc4py"
  log "  with PETSC_DIR and PETSC_ARCH set, --no-build-isolation); C submissions do not"
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
