"""The driver inside a packed allocation: every job of one variant runs in this one batch job.

    python -m hpcbench.jobs.pack MANIFEST.json

The batch script `exec`s this (hpcbench/executors/pack.py writes both). It finds the
allocation's nodes (its scheduler's view, hpcbench/schedulers/), measures the machine's
own baseline (jobs/baseline.py)
when asked, then starts each job's usual driver (`python -m hpcbench.jobs.job SPEC`)
with its node set in HPCBENCH_PACK (jobs/placement.py):
- jobs wider than a node run one after another, each on the fewest nodes that hold it
  (on a one-node allocation a wider job runs there, oversubscribed, as unpacked);
- the others run side by side, spread over the nodes; each node's core slots
  (jobs/slots.py) keep their runs from oversubscribing one another, and the launcher (srun
  --exact steps, an mpiexec host file: jobs/launchers.py) puts the ranks on the cores.
A job that already has a record is not started again (nothing finished is redone).
At the walltime warning (USR2) or a cancel (SIGTERM) the running jobs are stopped as
cancelled (their finished runs set aside in cancelled.json) and the jobs not started
stay without a record: both are "not run", and `submit --resume` runs them."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel

from hpcbench.jobs import baseline, diskfull, interrupt, slots
from hpcbench.jobs.cores import NodeLayout, whole_node_findings
from hpcbench.jobs.interrupt import WALLTIME_ENV
from hpcbench.jobs.placement import ENV, PackContext
from hpcbench.jobs.records import JobResult, JobSpec, Launcher, save_model, write_atomic
from hpcbench.schedulers.base import ENV as SCHEDULER_ENV
from hpcbench.schedulers.base import AllocationView, view_for


class BaselineRequest(BaseModel):
    out: str  # <campaign>/machine/baseline-<variant>.json
    ranks: list[int]
    launcher: Launcher
    python: str = ""


class PackManifest(BaseModel):
    scheduler: str  # its allocation view's name (hpcbench/schedulers/)
    variant: str
    specs: list[str]  # spec files, in the order they are started
    cores_per_node: int
    work_dir: str  # the campaign's work/ folder
    summary: str  # where this driver writes what it ran and what it left
    baseline: BaselineRequest | None = None
    layout: NodeLayout | None = None  # a node's cores and GPUs as runs are given them (the site's partition)
    # Per variant: ranks one node holds for a run (GPU variants: one per GPU), and, when the
    # allocation holds several variants, the shell lines (modules, env) its jobs start with.
    ranks_per_node: dict[str, int] = {}
    variant_setup: dict[str, list[str]] = {}
    # The allocation's nodes are the job's alone (the site's batch `whole_nodes`, ALCF): every core of
    # the layout is its own, whatever per-chunk count the scheduler exports (see PackDriver).
    whole_nodes: bool = False
    # Jobs in flight at once, each running one step (a build or a run) at a time: the site's
    # `batch.max_steps` (OLCF: at most 100 simultaneous srun's; every step asks the controller).
    max_steps: int = 100
    node_threads: int = 0  # a node's hardware threads as the site declares them (ALCF's ncpus of a node; 0: unknown)


def node_warnings(m: PackManifest, ncpus: str, affinity: set[int]) -> list[str]:
    """Where the node the driver runs on disagrees with the site's node on whole-node sites
    (jobs/cores.whole_node_findings, the rule doctor checks too). The driver keeps the site's cores
    (its documented node); these say why a run may fail."""
    if not m.whole_nodes or m.layout is None:
        return []
    return list(whole_node_findings(ncpus, m.node_threads, m.layout, affinity).values())


class PackDriver:
    def __init__(self, manifest: PackManifest, view: AllocationView):
        self.m, self.view = manifest, view
        self.hosts = view.hosts()
        # On whole nodes PBS's NCPUS is only the first chunk's ncpus (OpenPBS src/resmom/start_exec.c
        # sets it from the chunk's threads), 1 where the select asks none (src/server/node_manager.c:
        # a chunk without ncpus gets one), as ALCF's `select=N:system=polaris` does: read as the
        # node's cores it put every run of a Polaris or Aurora allocation on core 0.
        self.cpn = manifest.cores_per_node if manifest.whole_nodes else view.cores_per_node(manifest.cores_per_node)
        self.alloc_id = view.job_id() or f"local-{os.getpid()}"
        self.warnings = node_warnings(manifest, view.env.get("NCPUS", ""), os.sched_getaffinity(0))
        for w in self.warnings:
            print(f"hpcbench pack: warning: {w}", file=sys.stderr)
        self.stopping = False
        self.priority: dict[str, int] = {}  # job -> its place in the manifest (the most work first)
        self.running: dict[str, tuple[subprocess.Popen, JobSpec]] = {}
        self.summary: dict = {"allocation": self.alloc_id, "hosts": self.hosts, "cores_per_node": self.cpn,
                              "started": [], "finished": [], "not_run": [], "already_done": [], "disk_full": [],
                              "warnings": self.warnings}
        self.paths: dict[str, str] = {}  # job -> its spec file
        self.full: diskfull.FullJobs[tuple[str, JobSpec]] = diskfull.FullJobs()  # tries and room: the local policy
        self.again: list[tuple[str, JobSpec]] = []  # met a full disk that has room again: run once more

    @property
    def slots_root(self) -> Path:
        """The allocation's core slots, in node-local memory (jobs/slots.py): every job driver runs
        here, on the batch step's node, whichever nodes its runs go to."""
        # one allocation's of one campaign (its work folder): two campaigns, or tests, that see one
        # allocation id never share slots
        tag = hashlib.sha1(self.m.work_dir.encode()).hexdigest()[:10]
        return slots.node_local_root() / f"hpcbench-slots-{self.alloc_id.replace('/', '_')}-{tag}"

    def _slots_dir(self, host: str) -> Path:
        folder = self.slots_root / host
        if not folder.is_dir() and self.m.layout is not None:
            # slot i is core i of the node (never more cores than the scheduler gave)
            folder.mkdir(parents=True, exist_ok=True)
            self.m.layout.model_copy(update={"cores": self.m.layout.cores[:self.cpn]}).save(folder)
        return folder

    def _context(self, hosts: list[str], variant: str = "") -> PackContext:
        return PackContext(self.m.scheduler, tuple(hosts), self.per_node(variant),
                           str(Path(self.m.work_dir) / ".pack-hosts" / self.alloc_id.replace("/", "_")),
                           driver_host=self.hosts[0])

    def per_node(self, variant: str) -> int:
        """Ranks a node holds for a run of `variant`: its cores, or one per GPU for a GPU variant."""
        return min(self.cpn, self.m.ranks_per_node.get(variant) or self.cpn)

    def nodes_for(self, spec: JobSpec) -> int:
        """The nodes a job gets: the fewest that hold its widest run, or its runs' own span (a sweep
        point's), never more than the allocation's."""
        fewest = -(-spec.width // self.per_node(spec.variant.name))
        return max(1, min(len(self.hosts), max(fewest, spec.span)))

    def _argv(self, spec_path: str, variant: str) -> list[str]:
        """The job's driver; in an allocation of several variants, after its variant's setup lines."""
        argv = [sys.executable, "-u", "-m", "hpcbench.jobs.job", spec_path]
        lines = self.m.variant_setup.get(variant)
        if not lines:
            return argv
        return ["bash", "-c", "\n".join([*lines, 'exec "$@"']), "hpcbench-job", *argv]

    def job_env(self, spec: JobSpec, hosts: list[str], base: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment a job's driver starts with, on `hosts`: the batch script's (`base`, else
        this process's), less the allocation's walltime (not the job's) and what the view drops (an
        allocation's request that the job's steps would read as theirs), plus its node set and slots."""
        base = os.environ if base is None else base
        env = {k: v for k, v in base.items() if k not in (WALLTIME_ENV, *self.view.step_drops)}
        env[SCHEDULER_ENV] = self.m.scheduler
        env[ENV] = self._context(hosts, spec.variant.name).to_env()
        env[slots.ENV] = f"{self._slots_dir(hosts[0])}:{self.cpn * len(hosts)}"
        env[slots.PRIORITY_ENV] = str(self.priority.get(spec.job_id, len(self.priority)))
        return env

    def _start(self, spec_path: str, spec: JobSpec, hosts: list[str]) -> None:
        Path(spec.work_dir).mkdir(parents=True, exist_ok=True)
        with open(Path(spec.work_dir) / "job.log", "ab") as log:
            proc = subprocess.Popen(self._argv(spec_path, spec.variant.name), stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True, env=self.job_env(spec, hosts))
        self.running[spec.job_id] = (proc, spec)
        self.paths[spec.job_id] = spec_path
        self.summary["started"].append({"job": spec.job_id, "hosts": hosts, "at": time.time()})

    def _reap(self) -> None:
        for jid, (proc, spec) in list(self.running.items()):
            if proc.poll() is None:
                continue
            del self.running[jid]
            if Path(spec.record_path).is_file():
                self.summary["finished"].append(jid)
            elif proc.returncode == diskfull.EXIT_DISK_FULL:
                # The file system's failure, not the program's: no record (a resume runs it again),
                # and where room came back (a step filled it past its own limit and was freed)
                # once more in this allocation, as the local executor does.
                self.summary["disk_full"].append(jid)
                self.full.add(spec, (self.paths[jid], spec))
                self.again += self.full.with_room()
                self.full.waiting.clear()  # room is looked for once, at its exit: the rest wait for the resume
            elif not (Path(spec.work_dir) / "cancelled.json").is_file() and not self.stopping:
                save_model(Path(spec.record_path), JobResult(
                    job_id=jid, agent=spec.agent, problem=spec.problem, attempt=spec.attempt, status="error",
                    scheduler=self.m.scheduler, scheduler_job_id=self.alloc_id,
                    reason=f"job process exited {proc.returncode} without a record (packed allocation "
                           f"{self.alloc_id}; see {Path(spec.work_dir) / 'job.log'})"))
                self.summary["finished"].append(jid)

    def stop(self, signum: int, frame) -> None:
        if self.stopping:
            return
        self.stopping = True
        for proc, _ in self.running.values():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGTERM)

    def run(self, specs: list[tuple[str, JobSpec]]) -> None:
        self.priority = {spec.job_id: i for i, (_, spec) in enumerate(specs)}
        todo = []
        for path, spec in specs:
            if Path(spec.record_path).is_file():
                self.summary["already_done"].append(spec.job_id)
            else:
                todo.append((path, spec))
        nodes = self.nodes_for
        wide = [(p, s) for p, s in todo if nodes(s) > 1]
        narrow = [(p, s) for p, s in todo if nodes(s) == 1]
        for path, spec in wide:  # one at a time: their runs span nodes
            if self.stopping:
                break
            self._start(path, spec, self.hosts[:nodes(spec)])
            while self.running:
                self._reap()
                time.sleep(0.2)
        narrow += [(p, s) for p, s in self.again if nodes(s) == 1]  # a wide one waits for the resume
        self.again.clear()
        # Side by side (their builds and runs take core slots); on several nodes each node's
        # slots are its own, so jobs go round the nodes and admission follows the first's.
        admit = slots.Admission(self._slots_dir(self.hosts[0]), self.cpn)
        i = 0
        while (narrow and not self.stopping) or self.running:
            while not self.stopping and len(self.running) < self.m.max_steps and \
                    (k := admit.next(narrow, len(self.running) // len(self.hosts), lambda ps: ps[1].width)) is not None:
                path, spec = narrow.pop(k)
                self._start(path, spec, [self.hosts[i % len(self.hosts)]])
                i += 1
            self._reap()
            narrow += self.again
            self.again.clear()
            time.sleep(0.2)

    def wait_stopped(self) -> None:
        deadline = time.monotonic() + self.view.stop_grace_s
        while self.running and time.monotonic() < deadline:
            self._reap()
            time.sleep(0.2)
        for proc, _ in self.running.values():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        self._reap()


def main(argv: list[str] | None = None) -> int:
    argv = argv if argv is not None else sys.argv[1:]
    if len(argv) != 1:
        print("usage: python -m hpcbench.jobs.pack MANIFEST.json", file=sys.stderr)
        return 2
    m = PackManifest.model_validate_json(Path(argv[0]).read_text())
    driver = PackDriver(m, view_for(m.scheduler))
    # a requeued allocation keeps its id (Slurm's requeue): slots a driver that is gone left on this
    # node's memory would hold cores nobody releases
    shutil.rmtree(driver.slots_root, ignore_errors=True)
    for sig in (signal.SIGTERM, signal.SIGUSR2, signal.SIGINT):
        signal.signal(sig, driver.stop)
    interrupt.warn_before_walltime(driver.stop)  # PBS warns of no walltime: the driver's own timer
    t0 = time.time()
    if m.baseline and not Path(m.baseline.out).is_file():
        try:
            baseline.in_allocation(m, driver.hosts, driver.cpn)
        except Exception as e:  # the jobs still run: the baseline only frames their efficiency
            print(f"hpcbench pack: machine baseline failed: {type(e).__name__}: {e}", file=sys.stderr)
    driver.summary["baseline_s"] = time.time() - t0
    specs = [(p, JobSpec.model_validate_json(Path(p).read_text())) for p in m.specs]
    driver.run(specs)
    driver.wait_stopped()
    driver.summary["not_run"] = [s.job_id for _, s in specs if not Path(s.record_path).is_file()]
    driver.summary["wall_s"] = time.time() - t0
    driver.summary["stopped"] = driver.stopping
    shutil.rmtree(driver.slots_root, ignore_errors=True)  # node-local memory: nobody else frees it
    write_atomic(Path(m.summary), json.dumps(driver.summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
