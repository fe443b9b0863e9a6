"""PBS Pro (ALCF Polaris, Aurora): generated #PBS array scripts, qsub, `qstat -xf -F json`, qdel.

A job array per resource shape (`-J 0-N`, a plain job when N is one); each subjob
picks its spec by $PBS_ARRAY_INDEX from a list beside the script and `exec`s
`python -m hpcbench.jobs.job SPEC`, so PBS's SIGTERM at the walltime reaches the job's
handler (jobs/interrupt.py), which records a timeout. PALS `mpiexec` (the site's
launcher template) starts the ranks. Ids: `1234.server`, arrays `1234[].server`,
subjobs `1234[7].server`.

Polling uses `qstat -xf -F json -t` (history included: finished jobs that plain qstat
no longer shows). qstat exits 153 for an unknown id (purged from history) and 35
for a finished job asked without -x; both still print what it knows of the others."""

from __future__ import annotations

import json
import re
import shlex
import shutil
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
from hpcbench.schedulers.settings import PbsSettings, own_settings
from hpcbench.site import SiteConfig

QSTAT_UNKNOWN_JOB = 153
QSTAT_JOB_FINISHED = 35
# PBS Pro job_state letters -> the Slurm vocabulary batch.py reconciles with.
_ACTIVE = {"Q": "PENDING", "H": "PENDING", "W": "PENDING", "T": "PENDING", "M": "PENDING", "S": "SUSPENDED",
           "R": "RUNNING", "E": "COMPLETING", "B": "RUNNING", "U": "SUSPENDED"}
# Negative Exit_status values set by the MoM (PBS Professional reference guide, "job exit status").
_EXEC_FAILED = {-1, -2, -3, -4, -5, -6, -7, -8, -9, -10, -11, -12, -13, -14, -15, -16, -17, -18, -19, -20}
EXIT_WALLTIME = -29
_EXIT_MEMORY = {-27, -26}  # mem, vmem over the limit


def hms(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}:00"


def pbs_head(plan: ArrayPlan, site: SiteConfig, account: str, log_dir: Path, nodes: int, ncpus: int,
             placement: list[str], array: list[str]) -> list[str]:
    """The #PBS directives and setup lines of an array (`array`: its -J) or of a packed
    allocation (`placement`: place=scatter over `nodes` nodes)."""
    part = plan.partition
    own = own_settings(site.batch, PbsSettings)
    select = f"select={nodes}"
    if not own.whole_nodes:
        select += f":ncpus={ncpus}" + (f":ngpus={plan.shape.gpus}" if plan.shape.gpus else "")
    elif part is not None and part.cores_per_node:
        # Whole nodes (ALCF): each chunk asks the node's every hardware thread, which is what ALCF's
        # PBS counts in ncpus (64 on Polaris, 208 on Aurora), so the MoM's NCPUS is the node's and
        # not the 1 of a chunk that asks none (OpenPBS src/resmom/start_exec.c; docs/sites.md
        # alcf-whole-nodes). The driver still takes the node's cores from the site (jobs/pack.py).
        select += f":ncpus={part.hardware_threads}"
    if own.select_extra:
        select += f":{own.select_extra}"
    lines = ["#!/bin/bash", f"#PBS -N {plan.name[:15]}", f"#PBS -l {select}", *placement,
             f"#PBS -l walltime={hms(plan.walltime_min)}"]
    if own.filesystems:
        lines.append(f"#PBS -l filesystems={own.filesystems}")
    if part and part.queue:
        lines.append(f"#PBS -q {part.queue}")
    if account:
        lines.append(f"#PBS -A {account}")
    lines += array
    # A rerun is the driver's decision (-r n), but OpenPBS's qsub refuses a non-rerunnable array
    # ("cannot submit non-rerunable Array Job", src/cmds/qsub.c): arrays are rerunnable, and a
    # rerun subjob resumes from its finished runs (jobs/resume.py).
    lines += ["#PBS -j oe", f"#PBS -o {log_dir}/", "#PBS -r y" if array else "#PBS -r n"]
    lines += [f"#PBS {d}" for d in [*site.batch.directives, *(part.directives if part else [])]]
    return lines + ["", "# setup", *plan.setup, f"export {WALLTIME_ENV}={plan.walltime_min * 60}", ""]


def pbs_script(plan: ArrayPlan, site: SiteConfig, account: str, python: str, list_file: Path,
               log_dir: Path) -> str:
    # `%N` caps the subjobs running at once (OpenPBS src/cmds/qsub.c: max_run_subjobs), as
    # Slurm's --array=...%N does with the same site field
    n, cap = len(plan.jobs), site.batch.array_parallelism
    array = [f"#PBS -J 0-{n - 1}" + (f"%{cap}" if cap < n else "")] if n > 1 else []
    lines = pbs_head(plan, site, account, log_dir, 1, plan.shape.cpus, [], array)
    lines += ["# this subjob's spec (line PBS_ARRAY_INDEX+1 of the list)",
              'idx="${PBS_ARRAY_INDEX:-0}"',
              f'spec="$(sed -n "$((idx + 1))p" {shlex.quote(str(list_file))})"',
              f'exec >>{shlex.quote(str(log_dir))}/"${{PBS_JOBID}}.log" 2>&1',
              "# exec: PBS's SIGTERM at the walltime goes straight to the job's handler",
              f'exec {shlex.quote(python)} -u -m hpcbench.jobs.job "$spec"', ""]
    return "\n".join(lines)


def parse_qsub(out: str) -> str:
    m = re.search(r"^\s*(\d+(?:\[\])?(?:\.[\w.\-]+)?)\s*$", out, re.M)
    if not m:
        raise HpcbenchError(f"could not read a job id from qsub's output: {out.strip()!r}")
    return m.group(1)


def subjob_ids(array_id: str, n: int) -> list[str]:
    if n == 1 or "[]" not in array_id:
        return [array_id]
    return [array_id.replace("[]", f"[{i}]") for i in range(n)]


def state_of(job: dict) -> SchedInfo:
    st = str(job.get("job_state", ""))
    comment = str(job.get("comment", ""))
    if st in _ACTIVE:
        return SchedInfo(_ACTIVE[st], reason=comment)
    code = job.get("Exit_status", job.get("exit_status"))
    if code is None:
        return SchedInfo("CANCELLED" if "delet" in comment.lower() else "UNKNOWN", reason=comment)
    code = int(code)
    if code == 0:
        state = "COMPLETED"
    elif code == EXIT_WALLTIME:
        state = "TIMEOUT"
    elif code in _EXIT_MEMORY:
        state = "OUT_OF_MEMORY"
    elif code in _EXEC_FAILED:
        state = "BOOT_FAIL"  # the job could not start on its node: retried
    elif code == 256 + 15:
        state = "CANCELLED"  # SIGTERM from qdel with no handler in the way
    else:
        state = "FAILED"
    return SchedInfo(state, exit_code=str(code), reason=comment)


def parse_qstat_json(text: str) -> dict[str, SchedInfo]:
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError:
        return {}
    return {jid: state_of(job) for jid, job in (data.get("Jobs") or {}).items()}


class PbsBackend(Backend):
    name = "pbs"
    submit_command = "qsub"
    query = schedcmd.QUERY  # qstat, qdel: timeout and retries (executors/schedcmd.py)

    def __init__(self, site: SiteConfig, folder: Path, specs_dir: Path):
        self.site, self.folder, self.specs_dir = site, folder, specs_dir
        self.python = site.batch.python or sys.executable
        self.query, self.submit_policy = schedcmd.policies(site.batch)

    def _files(self, plan: ArrayPlan, key: str) -> tuple[Path, Path, Path]:
        return self.folder / f"{key}.sh", self.folder / f"{key}.jobs", self.folder / "logs"

    def render(self, plan: ArrayPlan, account: str) -> str:
        script, jobs, logs = self._files(plan, plan.name)
        return pbs_script(plan, self.site, account, self.python, jobs, logs)

    def submit_array(self, plan: ArrayPlan, account: str) -> tuple[str, list[str], str]:
        if shutil.which("qsub") is None:
            raise HpcbenchError(f"site {self.site.name!r}: qsub not found on PATH (is this a PBS login node?)")
        n_before = len(list(self.folder.glob("*.sh"))) if self.folder.is_dir() else 0
        script, jobs, logs = self._files(plan, f"{plan.name}-{n_before}")
        logs.mkdir(parents=True, exist_ok=True)
        jobs.write_text("".join(f"{self.specs_dir / (j.job_id + '.json')}\n" for j in plan.jobs))
        script.write_text(pbs_script(plan, self.site, account, self.python, jobs, logs))
        p = schedcmd.call(["qsub", str(script)], self.submit_policy, submission=True)
        if p.returncode != 0:
            raise HpcbenchError(f"qsub refused array {plan.name} (queue {plan.shape.partition or 'default'}): "
                                f"{(p.stderr or p.stdout).strip()}")
        array_id = parse_qsub(p.stdout)
        return array_id, subjob_ids(array_id, len(plan.jobs)), str(script)

    # ------------------------------------------------------------------ packed allocation
    def render_pack(self, plan: PackPlan, account: str, manifest: Path, command: str) -> str:
        log_dir = self.folder / "logs"
        lines = pbs_head(plan, self.site, account, log_dir, plan.nodes, plan.cores_per_node,
                         ["#PBS -l place=scatter"], [])
        lines += [f'exec >>{shlex.quote(str(log_dir))}/"${{PBS_JOBID}}.log" 2>&1',
                  f"# {len(plan.jobs)} job(s) run inside this allocation on hosts from $PBS_NODEFILE",
                  command, ""]
        return "\n".join(lines)

    def submit_pack(self, plan: PackPlan, account: str, manifest: Path, key: str, command: str) -> tuple[str, str]:
        if shutil.which("qsub") is None:
            raise HpcbenchError(f"site {self.site.name!r}: qsub not found on PATH (is this a PBS login node?)")
        (self.folder / "logs").mkdir(parents=True, exist_ok=True)
        script = self.folder / f"{key}.sh"
        script.write_text(self.render_pack(plan, account, manifest, command))
        p = schedcmd.call(["qsub", str(script)], self.submit_policy, submission=True)
        if p.returncode != 0:
            raise HpcbenchError(f"qsub refused allocation {plan.name} (queue {plan.shape.partition or 'default'}): "
                                f"{(p.stderr or p.stdout).strip()}")
        return parse_qsub(p.stdout), str(script)

    def poll(self, ids: list[str]) -> dict[str, SchedInfo]:
        if not ids:
            return {}
        # Ask for the arrays (with -t their subjobs) and the plain jobs.
        ask = sorted({re.sub(r"\[\d+\]", "[]", i) for i in ids})
        p = schedcmd.call(["qstat", "-xf", "-F", "json", "-t", *ask], self.query)
        if p.returncode not in (0, QSTAT_UNKNOWN_JOB, QSTAT_JOB_FINISHED):
            # not an answer about the jobs: never read as "unknown to the scheduler" (that leads to "lost")
            raise schedcmd.SchedulerUnreachable(f"qstat exited {p.returncode}: "
                                                f"{(p.stderr or p.stdout).strip()[-300:]}")
        try:
            json.loads(p.stdout or "{}")
        except ValueError:
            raise schedcmd.SchedulerUnreachable(f"qstat answered with something that is not JSON: "
                                                f"{p.stdout.strip()[:200]!r}") from None
        out = parse_qstat_json(p.stdout)
        return {i: out[i] for i in ids if i in out}

    def usage(self, ids: list[str]) -> dict:
        """`qstat -xf -F json` of the finished jobs (history included): resources_used."""
        from hpcbench.executors.accounting import parse_qstat_usage

        try:  # accounting is a report's extra: an unreachable server leaves it empty, never fails collect
            p = schedcmd.call(["qstat", "-xf", "-F", "json", *ids], self.query)
        except schedcmd.SchedulerUnreachable:
            return {}
        return parse_qstat_usage(p.stdout) if p.returncode in (0, QSTAT_UNKNOWN_JOB) else {}

    def cancel(self, ids: list[str]) -> None:
        p = schedcmd.call(["qdel", *ids], self.query)
        if p.returncode not in (0, QSTAT_JOB_FINISHED):
            raise HpcbenchError(f"qdel {' '.join(ids)} failed: {(p.stderr or p.stdout).strip()}")

    def log_tail(self, sched_id: str, n: int = 1500) -> str:
        p = self.folder / "logs" / f"{sched_id}.log"
        return p.read_text(errors="replace")[-n:] if p.is_file() else ""


@register_executor("pbs")
class PbsExecutor(BatchExecutor):
    tools = ("qsub", "qstat", "qdel")

    @classmethod
    def login_launch(cls, site: SiteConfig, argv: list[str], account: str) -> list[str] | str:
        if site.batch.login_node_mpi:
            return argv
        return "PBS: launch needs an allocation; check with `qsub -I` and the launcher template"

    def make_backend(self) -> Backend:
        return PbsBackend(self.site, self.sched_dir / "pbs", self.campaign.specs_dir)
