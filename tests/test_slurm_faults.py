"""The real Slurm test cluster with its controller and accounting out of reach: the real Slurm
clients pointed at a copy of its slurm.conf whose ports nothing listens on (what a killed
slurmctld and slurmdbd look like from a login node), and PATH shims that hang in place of
sbatch/sacct/squeue/scontrol (a hung controller). `status` and `wait` say the scheduler is
unreachable and conclude nothing; `submit` fails in bounded time naming why; a running job is
never recorded as lost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.clusters import read_ledger, site_variant
from tests.conftest import ROOT

pytestmark = [pytest.mark.slurm, pytest.mark.petsc]


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).parent / "hpcbench"
    return subprocess.run([str(exe), *args], capture_output=True, text=True, cwd=ROOT, timeout=timeout,
                          env={**os.environ, **(env or {})})


def dead_conf(conf: str, tmp: Path) -> str:
    """The cluster's slurm.conf with the controller's and slurmdbd's ports moved where nothing listens."""
    text = Path(conf).read_text()
    port = next(ln for ln in text.splitlines() if ln.startswith("SlurmctldPort=")).split("=")[1]
    dbport = next(ln for ln in text.splitlines() if ln.startswith("AccountingStoragePort=")).split("=")[1]
    text = text.replace(f"SlurmctldPort={port}", "SlurmctldPort=16997").replace(
        f"AccountingStoragePort={dbport}", "AccountingStoragePort=16999")
    out = tmp / "dead" / "slurm.conf"
    out.parent.mkdir()
    out.write_text(text)
    for f in Path(conf).parent.glob("*.conf"):
        if f.name not in ("slurm.conf", "slurmdbd.conf"):
            (out.parent / f.name).write_text(f.read_text())
    return str(out)


def hanging(tmp: Path, *names: str) -> str:
    """PATH with shims that never answer in place of the Slurm clients `names`."""
    shim = tmp / "hang"
    shim.mkdir(exist_ok=True)
    for n in names:
        (shim / n).write_text("#!/bin/sh\nsleep 600\n")
        (shim / n).chmod(0o755)
    return f"{shim}:{os.environ['PATH']}"


def test_an_unreachable_scheduler_is_said_so_and_never_loses_a_running_job(
        slurm_cluster, slow_tree, tmp_path):
    site = site_variant(tmp_path, "ci-slurm-impatient", **{
        "  poll_s: 2": "  poll_s: 2\n  command_timeout_s: 4\n  submit_timeout_s: 4\n  command_tries: 2"})
    out = tmp_path / "c"
    args = ["--site", str(site), "--submissions", str(slow_tree), "--problems", "rosenbrock"]
    p = cli("submit", *args, "--out", str(out))
    assert p.returncode == 0, p.stderr
    slow = "slow-coder__rosenbrock__1"
    try:
        for _ in range(240):
            if f"running   {slow}" in cli("status", str(out)).stdout:
                break
            time.sleep(0.5)
        ledger = read_ledger(out)
        for e in ledger["jobs"].values():  # long after submission: the old rule said "lost" at 600 s
            e["submitted_ts"] -= 7200
        (out / "scheduler" / "ledger.json").write_text(json.dumps(ledger))

        dead = {"SLURM_CONF": dead_conf(slurm_cluster, tmp_path)}
        t0 = time.monotonic()
        st = cli("status", str(out), env=dead)
        assert st.returncode == 0 and "Traceback" not in st.stderr, st.stderr
        # sacct: slurmdbd refuses at once; squeue: the controller's connect retries outlast 4 s
        assert "scheduler unreachable" in st.stderr and "Problem talking to the database" in st.stderr
        assert "squeue did not answer: no answer within 4 s" in st.stderr
        assert f"unknown   {slow}" in st.stdout, st.stdout
        assert time.monotonic() - t0 < 120

        t0 = time.monotonic()
        w = cli("wait", str(out), "--timeout", "5", env={"PATH": hanging(tmp_path, "sacct", "squeue", "scontrol")})
        took = time.monotonic() - t0
        assert w.returncode == 2 and "Traceback" not in w.stderr, w.stderr
        assert "scheduler unreachable, still waiting" in w.stderr and "no answer within 4 s" in w.stderr
        assert "gave up waiting" in w.stderr and took < 90, (took, w.stderr)

        assert not (out / "records" / f"{slow}.json").exists()  # not "lost": it is still running
        assert not read_ledger(out)["jobs"][slow]["outcome"]
        assert f"running   {slow}" in cli("status", str(out)).stdout  # back: the truth again

        # submitting while the controller is down: a bounded failure naming Slurm's words
        patient = site_variant(tmp_path, "ci-slurm-retrying", **{"  poll_s: 2": "  poll_s: 2\n  command_tries: 2"})
        t0 = time.monotonic()
        s = cli("submit", "--site", str(patient), *args[2:], "--out", str(tmp_path / "c2"), env=dead)
        assert s.returncode == 2 and "Traceback" not in s.stderr, s.stderr
        assert "Unable to contact slurm controller" in s.stderr and time.monotonic() - t0 < 120
        # a hung sbatch: never sent twice, the user told the submission may have arrived
        s = cli("submit", *args, "--out", str(tmp_path / "c3"), env={"PATH": hanging(tmp_path, "sbatch")})
        assert s.returncode == 2 and "may or may not have reached the scheduler" in s.stderr, s.stderr
        assert not read_ledger(tmp_path / "c3")["jobs"]
    finally:
        cli("cancel", str(out))
        cli("wait", str(out), "--timeout", "120")
