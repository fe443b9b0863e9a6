"""The clusters the tests run campaigns on, shared by every module that uses them: the real
single-node Slurm cluster of scripts/slurm-test-cluster.sh (its fixture, `slurm_cluster`, is
in conftest.py so that the cluster starts once a session, and pytest-xdist keeps the tests
that use it on one worker: the `slurm` group) and the PBS Pro stand-in (PBS Pro cannot be
installed on these machines: tests/fake_pbs/pbs_standin.py answers qsub, `qstat -xf -F json`
and qdel in PBS Pro's documented formats; `serve` plays the server, running each subjob's
generated script for real)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT

SCRIPT = ROOT / "scripts" / "slurm-test-cluster.sh"
STANDIN = ROOT / "tests" / "fake_pbs" / "pbs_standin.py"

SLOW_C = r"""/* Too slow on purpose: each run sleeps 25 s, past a 1-minute walltime. */
#include <petscsys.h>
int main(int argc, char **argv)
{
  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(PetscSleep(25));
  PetscCall(PetscFinalize());
  return 0;
}
"""


@contextlib.contextmanager
def running_cluster(settings: dict[str, str]) -> Iterator[str]:
    """A cluster of scripts/slurm-test-cluster.sh with `settings` (HPCBENCH_SLURM_*; none: the
    default one), started (installed when missing) unless it is up, stopped after if we
    started it; yields its SLURM_CONF."""
    if os.geteuid() != 0:
        pytest.fail("the Slurm test cluster runs its daemons as root (SlurmUser=root): run the tests as root")
    env = {**os.environ, **settings}
    conf = subprocess.run([str(SCRIPT), "env"], capture_output=True, text=True, check=True,
                          env=env).stdout.strip().split("=", 1)[1]
    was_up = subprocess.run([str(SCRIPT), "status"], capture_output=True, env=env).returncode == 0
    if not was_up:
        p = subprocess.run([str(SCRIPT), "start"], capture_output=True, text=True, timeout=900, env=env)
        assert p.returncode == 0, f"slurm-test-cluster.sh start {settings} failed:\n{p.stdout}\n{p.stderr}"
    try:
        yield conf
    finally:
        if not was_up:
            subprocess.run([str(SCRIPT), "stop"], capture_output=True, timeout=120, env=env)


def drained(timeout: float) -> None:
    """The tests time their jobs from sbatch on: someone else's job on the node's two CPUs
    would make them wait their whole patience (CI once found a job left from a work session
    queued ahead of its own). Wait for such jobs to end; name them if they do not."""
    end = time.monotonic() + timeout
    while True:
        left = subprocess.run(["squeue", "-h", "-o", "%i %j %T %u"], capture_output=True, text=True,
                              check=True).stdout.strip()
        if not left:
            return
        if time.monotonic() > end:
            pytest.fail(f"the Slurm test cluster is still busy after {timeout:.0f} s with jobs the tests "
                        f"did not submit:\n{left}\n(scancel them, or wait for them to end)")
        time.sleep(2)


def rosenbrock_tree(root: Path, agent: str, source: str) -> Path:
    """A submission tree of one hand-written rosenbrock program by `agent`."""
    d = root / agent / "rosenbrock" / "1"
    d.mkdir(parents=True)
    (d / "main.c").write_text(source)
    (d / "submission.json").write_text(json.dumps({
        "problem": "rosenbrock", "agent": agent, "model": "hand-written sample", "attempt": "1",
        "entry": "main.c", "files": ["main.c"], "ranks": [], "args": [], "refused": False, "generation": {}}))
    return root


def site_variant(tmp: Path, name: str, **edits: str) -> Path:
    """ci-slurm.yaml named `name`, with each `old` text replaced by its `new` (each must be there)."""
    text = (ROOT / "site-configs" / "ci-slurm.yaml").read_text().replace("name: ci-slurm", f"name: {name}")
    for old, new in edits.items():
        assert old in text
        text = text.replace(old, new)
    path = tmp / f"{name}.yaml"
    path.write_text(text)
    return path


def read_ledger(out: Path) -> dict:
    return json.loads((out / "scheduler" / "ledger.json").read_text())


def sacct_states(ids: list[str], wait_s: float = 60) -> dict[str, str]:
    """Each job's state as sacct has it. slurmdbd stores what slurmctld sends it asynchronously:
    under load a job that ended a moment ago may not be in the database yet, so ask again (up
    to `wait_s`) until every id is there."""
    roots = ",".join(sorted({i.split("_")[0] for i in ids}))
    deadline = time.monotonic() + wait_s
    while True:
        p = subprocess.run(["sacct", "-n", "-P", "-X", "-o", "JobID,State", "-j", roots], capture_output=True,
                           text=True, check=True)
        rows = (line.split("|")[:2] for line in p.stdout.splitlines() if line)
        got = {jid: state.split()[0] for jid, state in rows}  # "CANCELLED by 0" -> CANCELLED
        if set(ids) <= set(got) or time.monotonic() > deadline:
            return got
        time.sleep(1.0)


def install_fake_pbs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The PBS stand-in's qsub, qstat and qdel first on PATH, its state folder returned."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name in ("qsub", "qstat", "qdel"):
        (bindir / name).symlink_to(STANDIN)
    state = tmp_path / "pbs"
    state.mkdir()
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_PBS_DIR", str(state))
    monkeypatch.delenv("HPCBENCH_ACCOUNT", raising=False)
    return state


def pbs_state(d: Path) -> dict:
    return json.loads((d / "state.json").read_text())


def pbs_calls(d: Path) -> list[list[str]]:
    p = d / "calls.log"
    return [json.loads(x) for x in p.read_text().splitlines()] if p.is_file() else []


def _chunk(text: str) -> tuple[int, dict[str, str]]:
    """`2:ncpus=4:mpiprocs=2` as (2, {ncpus: 4, mpiprocs: 2}); the count is 1 where it is left out."""
    parts = text.split(":")
    n = int(parts.pop(0)) if parts[0].isdigit() else 1
    return n, dict(p.split("=", 1) for p in parts if "=" in p)


def mom_env(script: Path, d: Path, jid: str, hosts: list[str] | None = None) -> dict[str, str]:
    """What OpenPBS's MoM puts in a job's environment from its select (src/resmom/start_exec.c):
    NCPUS and OMP_NUM_THREADS, the first chunk's ncpus, which is 1 where the select asks none
    (src/server/node_manager.c); and, unless the test wrote its own, PBS_NODEFILE, a host line per
    MPI process slot (a chunk's mpiprocs, 1 by default), every chunk on this one machine, or with
    `hosts` chunk i on hosts[i] (place=scatter: a vnode each)."""
    select = ""
    for line in script.read_text().splitlines():
        m = re.match(r"#PBS\s+-l\s+select=(\S+)", line)
        if m:
            select = m.group(1)
    chunks = [_chunk(c) for c in select.split("+") if c] or [(1, {})]
    res = chunks[0][1]
    env = {"NCPUS": res.get("ncpus", "1"), "OMP_NUM_THREADS": res.get("ompthreads", res.get("ncpus", "1"))}
    if hosts or not os.environ.get("PBS_NODEFILE"):
        lines: list[str] = []
        for n, kv in chunks:
            for _ in range(n):
                host = hosts[len(set(lines)) % len(hosts)] if hosts else socket.gethostname()
                lines += [host] * int(kv.get("mpiprocs", 1))
        nodefile = d / f"nodefile.{jid}"
        nodefile.write_text("".join(f"{h}\n" for h in lines))
        env["PBS_NODEFILE"] = str(nodefile)
    return env


def serve(d: Path, jid: str, sigterm_after: float | None = None, walltime_kill: bool = False,
          sigterm_when: Path | None = None) -> None:
    """Run one queued (sub)job's script as the MoM would, then record how it ended.
    SIGTERM `sigterm_after` seconds after `sigterm_when` exists (within 300 s), or after the start."""
    s = pbs_state(d)
    job = s["jobs"][jid]
    job["job_state"] = "R"
    (d / "state.json").write_text(json.dumps(s))
    env = {**os.environ, "PBS_JOBID": jid, "PBS_O_WORKDIR": str(ROOT), **mom_env(Path(job["script"]), d, jid)}
    if "array_index" in job:
        env["PBS_ARRAY_INDEX"] = str(job["array_index"])
    started = time.time()
    proc = subprocess.Popen(["bash", job["script"]], env=env, start_new_session=True)
    if sigterm_after is not None:
        # a fixed delay from the start lands before the build ends on a loaded machine
        deadline = time.monotonic() + 300
        while sigterm_when is not None and not sigterm_when.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(sigterm_after)
        os.killpg(proc.pid, signal.SIGTERM)  # PBS at the walltime, or qdel of a running job
    rc = proc.wait(timeout=600)
    s = pbs_state(d)
    job = s["jobs"][jid]
    job["job_state"] = "X" if "array_index" in job else "F"
    # The MoM reports a walltime kill as JOB_EXEC_KILL_WALLTIME (-29) whatever the script returned.
    job["Exit_status"] = -29 if walltime_kill else rc
    # What the MoM accounts (qstat -xf resources_used): the job's real wall time and peak memory here.
    wall = int(round(time.time() - started))
    job["resources_used"] = {"walltime": f"{wall // 3600:02d}:{wall // 60 % 60:02d}:{wall % 60:02d}",
                             "mem": f"{resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}kb"}
    job["stime"], job["obittime"] = time.ctime(started), time.ctime()
    if walltime_kill:
        job["comment"] = "job killed: walltime 65 exceeded limit 60"
    (d / "state.json").write_text(json.dumps(s))


def polaris_here(tmp: Path) -> Path:
    """Polaris's config with this machine's PETSc, MPI and node (its own paths do not exist here;
    its runs are bound to the node's cores, and Polaris's 32 are not here)."""
    text = (ROOT / "site-configs" / "polaris.yaml").read_text()
    text = text.replace("name: polaris", "name: polaris-here")
    text = text.replace('template: "mpiexec --np {ranks} --ppn {ppn} --depth {depth} --cpu-bind depth"',
                        'template: "mpiexec -n {ranks}"')
    text = text.replace('oversubscribe_flag: ""\nvariants', 'oversubscribe_flag: "--oversubscribe"\nvariants')
    text = re.sub(r"\n *binding: pals[^\n]*", "", text)  # Open MPI here: its binding is found by itself
    text = text.replace("petsc_dir: /eagle/YOUR_PROJECT/hpcbench/spack-env/views/polaris-cpu", "petsc_dir: auto")
    text = re.sub(r"^ *modules: .*\n", "", text, flags=re.M)  # no `module` command on this machine
    # Arrays of several tasks: without debug's one-job-per-user limit (its refusal has its own test).
    text = text.replace("_per_user: 1", "_per_user: 0")
    text = text.replace("storage_root: /eagle/YOUR_PROJECT/hpcbench/campaigns", f"storage_root: {tmp}")
    # this machine's CPUs are cores of one hardware thread (Polaris's nodes have two a core)
    text = text.replace("cores_per_node: 32", f"cores_per_node: {os.cpu_count() or 1}")
    text = text.replace("threads_per_core: 2", "threads_per_core: 1")
    text += "timing_repeats: 1\nvalgrind: false\nsetup: []\n"
    p = tmp / "polaris-here.yaml"
    p.write_text(text)
    return p
