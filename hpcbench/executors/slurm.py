"""Slurm through submitit: one job array per resource shape, polled with sacct.

The pattern (measured on the test cluster, see tests/test_slurm_cluster.py):
- one submitit task per job (ntasks_per_node=1, cpus_per_task=the job's width); the job
  starts its own ranks with the site's launcher (`srun -n N` or `mpiexec -n N`).
- no srun wrapper (use_srun=False): a nested `srun` inside a wrapper step hangs unless
  `--overlap`, and the site's launcher template should be what users type interactively.
- the batch shell `exec`s Python and `--signal=B:USR2@M` goes to the batch step, so the
  job's handler (jobs/interrupt.py) records a timeout M seconds before the walltime.
- sbatch runs without the submitting shell's SLURM_*/SBATCH_* variables (SLURM_CONF kept).
- sacct is retried; when it keeps failing (no slurmdbd) squeue and scontrol answer."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from hpcbench.errors import HpcbenchError
from hpcbench.executors import schedcmd
from hpcbench.executors.backend import Backend, SchedInfo
from hpcbench.executors.base import register_executor
from hpcbench.executors.batch import BatchExecutor
from hpcbench.executors.pack import PackPlan
from hpcbench.executors.shapes import ArrayPlan
from hpcbench.jobs.interrupt import WALLTIME_ENV
from hpcbench.schedulers.settings import SlurmSettings, own_settings
from hpcbench.site import SiteConfig

_LEAKY = ("SLURM_", "SLURMD_", "SRUN_", "SBATCH_", "SALLOC_", "SUBMITIT_")
_KEEP = {"SLURM_CONF"}  # where the client finds the cluster: not a job variable


@contextlib.contextmanager
def clean_env():
    """Hide the submitting shell's Slurm variables (an salloc session, a job that
    submits): sbatch exports the environment, and they would mislead srun in the job."""
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith(_LEAKY) and k not in _KEEP}
    try:
        yield
    finally:
        os.environ.update(saved)


def parse_directives(items: list[str]) -> dict[str, object]:
    """["--exclusive", "--mail-type=END", "-x node1"] -> submitit additional_parameters."""
    out: dict[str, object] = {}
    for item in items:
        for tok in _split_options(item):
            key, _, val = tok.lstrip("-").partition("=")
            out[key] = val if val else True
    return out


def _split_options(item: str) -> list[str]:
    toks = shlex.split(item)
    merged: list[str] = []
    for t in toks:
        if merged and not t.startswith("-") and "=" not in merged[-1]:
            merged[-1] = f"{merged[-1]}={t}"
        else:
            merged.append(t)
    return merged


def sbatch_parameters(plan: ArrayPlan, site: SiteConfig, account: str, python: str) -> dict:
    part = plan.partition
    extra = parse_directives([*site.batch.directives, *(part.directives if part else [])])
    own = own_settings(site.batch, SlurmSettings)
    extra["signal"] = f"B:USR2@{own.signal_margin_s}"
    params: dict = dict(
        job_name=plan.name, time=plan.walltime_min, nodes=1, ntasks_per_node=1, cpus_per_task=plan.shape.cpus,
        setup=[*plan.setup, f"export {WALLTIME_ENV}={plan.walltime_min * 60}"],
        array_parallelism=max(1, site.batch.array_parallelism), use_srun=False, stderr_to_stdout=True,
        additional_parameters=extra, wckey=own.wckey or None,  # None: no --wckey line (submitit's default: submitit)
    )
    if part and part.queue:
        params["partition"] = part.queue
    if plan.shape.gpus:
        params["gpus_per_node"] = plan.shape.gpus
    if part and part.qos:
        params["qos"] = part.qos
    if part and part.constraint:
        params["constraint"] = part.constraint
    if account:
        params["account"] = account
    return params


def expand_array_id(job_id: str) -> list[str]:
    """sacct/squeue ids -> per-task ids: "12_[0-2,5%2]" -> 12_0 12_1 12_2 12_5; "12_3" -> 12_3."""
    m = re.fullmatch(r"(\d+)_\[([0-9,\-]+)(?:%\d+)?\]", job_id)
    if not m:
        return [job_id]
    out = []
    for part in m.group(2).split(","):
        lo, _, hi = part.partition("-")
        out += [f"{m.group(1)}_{i}" for i in range(int(lo), int(hi or lo) + 1)]
    return out


def parse_sacct(text: str) -> dict[str, SchedInfo]:
    """`sacct -n -P -X -o JobID,State,ExitCode,Reason` lines -> per-task states."""
    out: dict[str, SchedInfo] = {}
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) < 2 or not parts[0] or "." in parts[0]:
            continue
        state = parts[1].split()[0] if parts[1] else "UNKNOWN"  # "CANCELLED by 0" -> CANCELLED
        info = SchedInfo(state=state, exit_code=parts[2] if len(parts) > 2 else "",
                         reason=parts[3] if len(parts) > 3 else "")
        for jid in expand_array_id(parts[0]):
            out[jid] = info
    return out


def parse_squeue(text: str) -> dict[str, SchedInfo]:
    out: dict[str, SchedInfo] = {}
    for line in text.splitlines():
        jid, _, state = line.strip().partition("|")
        if jid:
            for j in expand_array_id(jid):
                out[j] = SchedInfo(state=state.strip() or "UNKNOWN")
    return out


def parse_max_step_count(text: str) -> int:
    """`MaxStepCount            = 40000` of `scontrol show config` (0: not there)."""
    m = re.search(r"^MaxStepCount\s*=\s*(\d+)", text, re.M)
    return int(m.group(1)) if m else 0


def exec_command(python: str, folder: Path) -> str:
    """exec: Python replaces the batch shell, so the B:USR2 warning reaches its handler."""
    return " ".join(["exec", shlex.quote(python), "-u -m submitit.core._submit", shlex.quote(str(folder))])


def _sbatch_error(e: BaseException) -> str:
    """The line that says why sbatch (through schedcmd) failed, out of submitit's exception text."""
    msg = str(e).strip().splitlines()
    return next((ln for ln in msg if ln.startswith("hpcbench:")), None) or \
        next((ln for ln in msg if "error" in ln.lower()), msg[-1] if msg else "")


@contextlib.contextmanager
def guarded_sbatch(folder: Path, policy: schedcmd.Policy):
    """submitit runs `sbatch FILE` itself, by name and without a timeout (submitit 1.5
    CommandFunction; arrays through a fresh SlurmExecutor of its own): a hung controller hung
    hpcbench. While submitit submits, `sbatch` on PATH is a two-line script that runs the real
    one through hpcbench.executors.schedcmd (timeout; retried only after a connection failure)."""
    real = shutil.which("sbatch")
    if real is None:
        yield
        return
    bin_dir = folder / ".bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    wrapper = bin_dir / "sbatch"
    wrapper.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m hpcbench.executors.schedcmd --timeout "
                       f"{policy.timeout_s:g} --tries {policy.tries} --submit -- {shlex.quote(real)} \"$@\"\n")
    wrapper.chmod(0o755)
    saved = os.environ.get("PATH", "")
    os.environ["PATH"] = f"{bin_dir}{os.pathsep}{saved}"
    try:
        yield
    finally:
        os.environ["PATH"] = saved


def _executor(folder: Path, python: str):
    import submitit

    return submitit.SlurmExecutor(folder=folder, python=f"exec {shlex.quote(python)}")


class SlurmBackend(Backend):
    name = "slurm"
    submit_command = "sbatch"
    query = schedcmd.QUERY  # sacct, squeue, scontrol, scancel: timeout and retries (executors/schedcmd.py)
    submit_policy = schedcmd.SUBMIT  # sbatch

    def __init__(self, site: SiteConfig, folder: Path, specs_dir: Path):
        self.site, self.folder, self.specs_dir = site, folder, specs_dir
        self.python = site.batch.python or sys.executable
        self.sacct_failures = 0  # consecutive; reported by `status`
        self.query, self.submit_policy = schedcmd.policies(site.batch)

    def _command(self) -> str:
        return exec_command(self.python, self.folder)

    def render(self, plan: ArrayPlan, account: str) -> str:
        # Private, kept: submitit has no public way to render the script without submitting it.
        from submitit.slurm.slurm import _make_sbatch_string

        params = sbatch_parameters(plan, self.site, account, self.python)
        n = len(plan.jobs)
        text = _make_sbatch_string(command=self._command(), folder=self.folder,
                                   map_count=n if n > 1 else None, **params)
        jobs = "\n".join(f"#   task {i}: {j.job_id}" for i, j in enumerate(plan.jobs))
        return f"{text}\n# hpcbench: {n} job(s) in this array\n{jobs}\n"

    def submit_array(self, plan: ArrayPlan, account: str) -> tuple[str, list[str], str]:
        from submitit.core.utils import FailedJobError, FailedSubmissionError

        from hpcbench.jobs import job as jobmain

        if shutil.which("sbatch") is None:
            raise HpcbenchError(f"site {self.site.name!r}: sbatch not found on PATH (is this a Slurm login node?)")
        python = self.python
        # submitit's public `python` option is the first words of the job's command line:
        # "exec PYTHON" makes it exactly exec_command(...), with no override of its private
        # `_submitit_command_str` (submitit 1.5 has no other public hook for the command).
        ex = _executor(self.folder, python)
        ex.update_parameters(**sbatch_parameters(plan, self.site, account, python))
        specs = [[str(self.specs_dir / f"{j.job_id}.json")] for j in plan.jobs]
        try:
            with clean_env(), guarded_sbatch(self.folder, self.submit_policy):
                jobs = ex.map_array(jobmain.main, specs)
        except (FailedJobError, FailedSubmissionError, subprocess.CalledProcessError, OSError) as e:
            detail = _sbatch_error(e)
            raise HpcbenchError(f"sbatch refused array {plan.name} (partition "
                                f"{plan.shape.partition or 'default'}): {detail.strip()}") from None
        ids = [j.job_id for j in jobs]
        array_id = ids[0].split("_")[0]
        script = str(self.folder / f"{array_id}_submission.sh")
        return array_id, ids, script

    # ------------------------------------------------------------------ packed allocation
    def max_step_count(self) -> int:
        """MaxStepCount of the cluster (`scontrol show config`; 0 where it does not say)."""
        try:
            p = schedcmd.call(["scontrol", "show", "config"], self.query)
        except schedcmd.SchedulerUnreachable:
            return 0
        return parse_max_step_count(p.stdout) if p.returncode == 0 else 0

    def pack_parameters(self, plan: PackPlan, account: str) -> dict:
        params = sbatch_parameters(plan, self.site, account, self.python)
        # Tasks, not one task with many cpus: `srun --exact -n R` steps take R of them.
        params.update(nodes=plan.nodes, ntasks_per_node=plan.cores_per_node, cpus_per_task=1)
        params.pop("array_parallelism", None)
        return params

    def render_pack(self, plan: PackPlan, account: str, manifest: Path, command: str) -> str:
        # Private, kept: submitit has no public way to render the script without submitting it.
        from submitit.slurm.slurm import _make_sbatch_string

        return _make_sbatch_string(command=self._command(), folder=self.folder,
                                   **self.pack_parameters(plan, account)) + f"\n# the job runs: {command}\n"

    def submit_pack(self, plan: PackPlan, account: str, manifest: Path, key: str, command: str) -> tuple[str, str]:
        """One sbatch for the whole allocation: submitit runs the pack driver (jobs/pack.py), which
        installs its own USR2/TERM handlers in place of submitit's."""
        from submitit.core.utils import FailedJobError, FailedSubmissionError

        from hpcbench.jobs import pack as packmain

        if shutil.which("sbatch") is None:
            raise HpcbenchError(f"site {self.site.name!r}: sbatch not found on PATH (is this a Slurm login node?)")
        ex = _executor(self.folder, self.python)
        ex.update_parameters(**self.pack_parameters(plan, account))
        try:
            with clean_env(), guarded_sbatch(self.folder, self.submit_policy):
                job = ex.submit(packmain.main, [str(manifest)])
        except (FailedJobError, FailedSubmissionError, subprocess.CalledProcessError, OSError) as e:
            detail = _sbatch_error(e)
            raise HpcbenchError(f"sbatch refused allocation {plan.name} (partition "
                                f"{plan.shape.partition or 'default'}): {detail.strip()}") from None
        return job.job_id, str(self.folder / f"{job.job_id}_submission.sh")

    def poll(self, ids: list[str]) -> dict[str, SchedInfo]:
        """States from accounting (sacct), else from the controller (squeue, scontrol). A job left
        out is one the scheduler answered about and does not know; SchedulerUnreachable when
        neither accounting nor the controller answered."""
        if not ids:
            return {}
        roots = sorted({i.split("_")[0] for i in ids})
        out: dict[str, SchedInfo] = {}
        accounting = ""
        try:
            p = schedcmd.call(["sacct", "-n", "-P", "-X", "-o", "JobID,State,ExitCode,Reason", "-j", ",".join(roots)],
                              self.query)
            if p.returncode == 0:
                self.sacct_failures = 0
                out = parse_sacct(p.stdout)
            else:
                accounting = f"sacct exited {p.returncode}: {p.stderr.strip()[:200]}"
        except schedcmd.SchedulerUnreachable as e:
            accounting = str(e)
        if accounting:
            self.sacct_failures += 1
        missing = [i for i in ids if i not in out or out[i].state == "UNKNOWN"]
        if missing:
            try:
                out.update(self._queue_fallback(missing))
            except schedcmd.SchedulerUnreachable as e:
                raise schedcmd.SchedulerUnreachable(f"{e}" + (f"; accounting: {accounting}" if accounting else "")
                                                    ) from None
        return {i: out[i] for i in ids if i in out}

    def _queue_fallback(self, ids: list[str]) -> dict[str, SchedInfo]:
        """Accounting down or slow to learn of a job: ask the controller (SchedulerUnreachable
        when it does not answer)."""
        out: dict[str, SchedInfo] = {}
        roots = sorted({i.split("_")[0] for i in ids})
        p = schedcmd.call(["squeue", "-h", "-r", "-o", "%i|%T", "-j", ",".join(roots)], self.query)
        if p.returncode == 0:
            out.update(parse_squeue(p.stdout))
        for i in ids:
            if i in out:
                continue
            # finished within MinJobAge: scontrol still knows the final state ("Invalid job id": it does not)
            p = schedcmd.call(["scontrol", "-o", "show", "job", i], self.query)
            m = re.search(r"\bJobState=(\S+)", p.stdout) if p.returncode == 0 else None
            if m:
                ec = re.search(r"\bExitCode=(\S+)", p.stdout)
                out[i] = SchedInfo(state=m.group(1), exit_code=ec.group(1) if ec else "")
        return out

    def usage(self, ids: list[str]) -> dict:
        """sacct of the allocations (array tasks by their own ids) and their steps."""
        from hpcbench.executors.accounting import parse_sacct_usage

        try:  # accounting is a report's extra: an unreachable slurmdbd leaves it empty, never fails collect
            p = schedcmd.call(["sacct", "-n", "-P", "-o", "JobID,State,ElapsedRaw,NNodes,MaxRSS,Start,End", "-j",
                               ",".join(ids)], self.query)
        except schedcmd.SchedulerUnreachable:
            return {}
        return parse_sacct_usage(p.stdout) if p.returncode == 0 else {}

    def cancel(self, ids: list[str]) -> None:
        p = schedcmd.call(["scancel", *ids], self.query)
        if p.returncode != 0:
            raise HpcbenchError(f"scancel {' '.join(ids)} failed: {p.stderr.strip()}")

    def log_tail(self, sched_id: str, n: int = 1500) -> str:
        for name in (f"{sched_id}_0_log.out", f"{sched_id}_0_log.err"):
            p = self.folder / name
            if p.is_file():
                return p.read_text(errors="replace")[-n:]
        return ""


@register_executor("slurm")
class SlurmExecutor(BatchExecutor):
    tools = ("sbatch", "squeue", "sacct", "scancel")

    @classmethod
    def login_launch(cls, site: SiteConfig, argv: list[str], account: str) -> list[str] | str:
        if site.batch.login_node_mpi or argv[0] != "srun":
            return argv
        # srun from a login node makes the check a one-job allocation of its own.
        # The partition by the name Slurm knows (none on Perlmutter, where `regular` is a QOS and
        # the constraint picks the nodes: docs/sites.md), its QOS and constraint.
        part = site.partitions[0]
        return [argv[0], "-t", "2", *(["-p", part.queue] if part.queue else []),
                *(["-q", part.qos] if part.qos else []), *(["-A", account] if account else []),
                *(["-C", part.constraint] if part.constraint else []), *argv[1:]]

    def make_backend(self) -> Backend:
        return SlurmBackend(self.site, self.sched_dir / "submitit", self.campaign.specs_dir)
