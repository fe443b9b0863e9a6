"""Isolation as the four sites would have it: a bubblewrap that is not the system's (a Spack
install puts it in its own prefix) used by an unprivileged user for a whole campaign, and
`doctor` saying which sandbox works on the node it runs on (docs/sites.md, isolation-site)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from hpcbench.petsc_env import find_petsc
from tests.conftest import ROOT, hpcbench

NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]


def _world_readable(path: Path) -> None:
    for p in [path, *path.rglob("*")]:
        p.chmod(p.stat().st_mode | stat.S_IROTH | (stat.S_IXOTH if p.is_dir() or os.access(p, os.X_OK) else 0))


@pytest.mark.petsc
def test_an_unprivileged_user_runs_a_campaign_through_bwrap_installed_outside_usr():
    if os.geteuid() != 0 or not shutil.which("setpriv") or not shutil.which("bwrap"):
        pytest.skip("needs root (to become `nobody` through setpriv) and a bwrap binary to copy")
    prefix = Path(tempfile.mkdtemp(prefix="spack-bwrap-"))  # world-readable, outside /usr, like a Spack prefix
    out = Path(tempfile.mkdtemp(prefix="nobody-campaign-"))
    try:
        (prefix / "libexec").mkdir()
        (prefix / "bin").mkdir()
        (prefix / "py").mkdir()
        shutil.copy2(shutil.which("bwrap"), prefix / "libexec" / "bwrap")  # type: ignore[arg-type]
        log = prefix / "used.log"
        log.touch()
        log.chmod(0o666)
        # The `bwrap` on PATH: records each sandbox it starts, then is the copied binary.
        (prefix / "bin" / "bwrap").write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {prefix}/libexec/bwrap "$@"\n')
        (prefix / "bin" / "bwrap").chmod(0o755)
        # This venv's interpreter lives under /root (mode 700): `nobody` runs the system's Python 3.11
        # with the venv's packages added as a site directory, in every process it starts.
        site_packages = next(Path(sys.prefix).glob("lib/python3*/site-packages"))
        (prefix / "py" / "sitecustomize.py").write_text(f"import site\nsite.addsitedir({str(site_packages)!r})\n")
        _world_readable(prefix)
        shutil.chown(out, "nobody")
        out.chmod(0o755)
        python = shutil.which("python3", path="/usr/bin")
        if python is None or subprocess.run([python, "-c", "import sys; assert sys.version_info[:2] == (3, 11)"]
                                            ).returncode != 0:
            pytest.skip("no system Python 3.11 for `nobody` to run this venv's packages with")
        env = {"PATH": f"{prefix}/bin:{os.environ['PATH']}", "HOME": str(out), "PYTHONPATH": str(prefix / "py"),
               "PETSC_DIR": str(find_petsc().petsc_dir), "LANG": "C.UTF-8"}
        p = subprocess.run([*NOBODY, "env", "-i", *(f"{k}={v}" for k, v in env.items()), python, "-c",
                            "import sys; from hpcbench.cli import main; sys.argv[0] = 'hpcbench'; sys.exit(main())",
                            "run", "--agent", "reference", "--problems", "vec-scatter", "--out", str(out / "c")],
                           capture_output=True, text=True, cwd=tempfile.gettempdir(), timeout=900)
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
        report = (out / "c" / "report" / "report.md").read_text()
        # the submissions table (agent-given names are code spans in report.md)
        assert "| `reference` | vec-scatter | `1` | passed checks | pass |" in report, report[-3000:]
        record = out / "c" / "records" / "reference__vec-scatter__1.json"
        assert record.stat().st_uid == 65534  # written by `nobody`, not root
        used = [ln for ln in log.read_text().splitlines() if ln != "--help"]  # --help: does it have --size?
        assert len(used) >= 3 and all("--unshare-all" in ln for ln in used)  # the build and the runs
        # each in a tmpfs of its disk limit, held open and copied out by `nobody` too (jobs/disk_cap.py)
        assert all("--size" in ln for ln in used)
        assert {r["disk_limit"] for r in json.loads(record.read_text())["runs"]} == {"kernel (tmpfs)"}
    finally:
        shutil.rmtree(prefix, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)


def test_doctor_says_which_sandbox_works_here(tmp_path, monkeypatch):
    monkeypatch.setenv("HPCBENCH_ACCOUNT", "p")
    p = hpcbench("doctor", "--site", "polaris", "--no-launch", check=False)
    assert "isolation: none" in p.stdout and "--trust-submissions" in p.stdout
    bwrap_row = next(ln for ln in p.stdout.splitlines() if ln.strip().startswith("bwrap here"))
    assert ("ok" in bwrap_row) == bool(shutil.which("bwrap")), bwrap_row
    assert any(ln.strip().startswith("apptainer here") for ln in p.stdout.splitlines())
    # Without bwrap on PATH (a node without the Spack view's bin): said so, not an error of the site.
    bare = tmp_path / "bin"
    bare.mkdir()
    for tool in ("mpicc", "mpiexec", "make"):
        if shutil.which(tool):
            (bare / tool).symlink_to(shutil.which(tool))  # type: ignore[arg-type]
    monkeypatch.setenv("PATH", str(bare))
    exe = Path(sys.executable).parent / "hpcbench"
    q = subprocess.run([str(exe), "doctor", "--site", "polaris", "--no-launch"], capture_output=True, text=True,
                       cwd=ROOT)
    row = next(ln for ln in q.stdout.splitlines() if ln.strip().startswith("bwrap here"))
    assert "bwrap not found" in row, row
