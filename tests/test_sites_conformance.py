"""Every script hpcbench would hand Polaris, Aurora, Frontier or Perlmutter, held to the rules of
docs/sites.md (each with its source in the center's documentation or the scheduler's code).

The rules are read from docs/sites.md's table; each id has one check below. For each site the
test renders, through the real planner and backends (no scheduler needed), the scripts and
launch lines of: every variant packed on one node and on the widest node count its queues take,
every variant unpacked (array tasks), a sweep (packed, with the machine baseline), and a
campaign of all variants at once. A failed check names the rule, its text and its source. The
checks are shown to fail on planted defects at the end (test_checks_catch_planted_defects)."""

from __future__ import annotations

import functools
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from hpcbench.errors import ConfigError, HpcbenchError
from hpcbench.executors import executor_for
from hpcbench.executors.pack import PackPlan, plan_launch_lines
from hpcbench.executors.shapes import ArrayPlan
from hpcbench.jobs.records import CaseRun, JobSpec, Variant
from hpcbench.plan.campaign import Campaign
from hpcbench.plan.trust import require_trust
from hpcbench.site import SiteConfig, load_site
from tests.conftest import SESSION

ROOT = Path(__file__).resolve().parent.parent
SITES = ("polaris", "aurora", "frontier", "perlmutter")


def read_rules() -> dict[str, tuple[str, str, str]]:
    """id -> (sites, rule, source) from docs/sites.md's rules table."""
    rules = {}
    text = (ROOT / "docs" / "sites.md").read_text()
    table = text.split("## Rules", 1)[1].split("\n## ", 1)[0]
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4 and cells[0] != "id" and re.fullmatch(r"[a-z][a-z0-9-]*", cells[0]):
            rules[cells[0]] = (cells[1], cells[2], " | ".join(cells[3:]))
    return rules


RULES = read_rules()


# ----------------------------------------------------------------------------- rendering


@dataclass
class Script:
    """One batch script as it would be submitted, the plan behind it and its launch lines."""

    label: str
    plan: ArrayPlan
    text: str
    launches: list[str]

    @property
    def variants(self) -> set[str]:
        return {j.variant.name for j in self.plan.jobs}


@dataclass
class Rendered:
    site: SiteConfig
    scripts: list[Script] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (scenario, the planner's refusal)
    login_launch: list[str] | str = ""  # doctor's 2-rank check from a login node


def job_spec(site: SiteConfig, tmp: Path, jid: str, variant: str, ranks: list[int],
             nodes: list[int] | None = None) -> JobSpec:
    """A job of `variant` whose runs have `ranks` ranks (each on `nodes` nodes where given: a
    sweep point's label)."""
    v = site.variant(variant)
    spans = nodes or [0] * len(ranks)
    return JobSpec(job_id=jid, agent="a", problem="p", attempt="1", source_dir=str(tmp), entry="main.c",
                   files=["main.c"], runs=[CaseRun(case=f"c{r}" + (f"-nodes{n}" if n else ""), args=[], ranks=r,
                                                   time_limit_s=30, nodes=n) for r, n in zip(ranks, spans,
                                                                                            strict=True)],
                   variant=Variant(name=variant, petsc_dir=v.petsc_dir, runtime_options=v.runtime_options,
                                   features=["gpu"] if v.is_gpu() else []),
                   launcher=v.launcher or site.launcher, limits=site.limits, isolation=site.sandbox(),
                   timing_repeats=1, valgrind=False, work_dir=str(tmp / "work" / jid),
                   record_path=str(tmp / "records" / f"{jid}.json"), cores=max(ranks), null_program_dir="",
                   gpus_per_rank=int(v.is_gpu()))  # as the planner sets it (plan/campaign.py)


def widest(site: SiteConfig, variant: str) -> int:
    """The most nodes the variant's queues take (64 where none declares a maximum)."""
    caps = [p.max_nodes for p in site.queues_for(variant)]
    return 64 if not caps or 0 in caps else max(caps)


def _launch_commands(plan: ArrayPlan, site: SiteConfig) -> list[str]:
    out = []
    for line in plan_launch_lines(plan, site):
        m = re.search(r"\b(srun|mpiexec|mpirun)\b.*", line)
        if m and not line.lstrip("# ").startswith("job "):
            out.append(m.group(0))
    return out


def render(site: SiteConfig, tmp: Path, label: str, jobs: list[JobSpec], pack: bool,
            baseline: list[int] | None, out: Rendered) -> None:
    folder = tmp / re.sub(r"\W+", "-", label)
    folder.mkdir(parents=True, exist_ok=True)
    ex = executor_for(site, Campaign(folder), account="proj123", pack=pack, baseline_ranks=baseline)
    try:
        scripts = ex.dry_run(jobs)
    except HpcbenchError as e:
        out.refused.append((label, str(e)))
        return
    out.scripts += [Script(label, p, text, _launch_commands(p, site)) for p, text in scripts]


def render_site(name: str, tmp: Path, site: SiteConfig | None = None) -> Rendered:
    site = site or load_site(name)
    out = Rendered(site)
    for v in site.variants:
        rpn = site.ranks_per_node(v.name) or 1
        wide = widest(site, v.name)
        one = job_spec(site, tmp, f"{v.name}-one", v.name, [1])
        jobs1 = [one, job_spec(site, tmp, f"{v.name}-full", v.name, [1, rpn])]
        render(site, tmp, f"{v.name} submit packed 1 node", jobs1, True, None, out)
        jobsw = [one, job_spec(site, tmp, f"{v.name}-w", v.name, [rpn * wide])]
        render(site, tmp, f"{v.name} submit packed {wide} nodes", jobsw, True, None, out)
        render(site, tmp, f"{v.name} submit unpacked 1 job", jobs1[:1], False, None, out)
        render(site, tmp, f"{v.name} submit unpacked 2 jobs", jobs1, False, None, out)
        sweep = [job_spec(site, tmp, f"{v.name}-sweep", v.name, [1, 2, rpn, 2 * rpn])]
        render(site, tmp, f"{v.name} sweep", sweep, True, [1, 2, rpn], out)
        if v is site.variants[0]:  # `sweep --nodes 1,2 --ranks 2`: one node holds both ranks, the label says 2
            labelled = [job_spec(site, tmp, f"{v.name}-nodes", v.name, [2, 2], nodes=[1, 2])]
            render(site, tmp, f"{v.name} sweep labelled nodes", labelled, True, [2], out)
    every = [job_spec(site, tmp, f"{v.name}-all", v.name, [1]) for v in site.variants]
    render(site, tmp, "all variants packed", every, True, None, out)
    from hpcbench.executors import executor_class

    out.login_launch = executor_class(site.scheduler).login_launch(site, ["srun", "-n", "2", "hello"], "proj123")
    return out


@functools.cache
def rendered(name: str) -> Rendered:
    return render_site(name, Path(tempfile.mkdtemp(prefix=f"conformance-{name}-", dir=SESSION)))


# ----------------------------------------------------------------------------- helpers for checks


def _directive(text: str, key: str) -> list[str]:
    return re.findall(rf"^#PBS -{key} (.+)$", text, re.M)


def _ranks_per_node(cmd: str) -> int:
    """Ranks a node gets from one launch command (packed: over its node list; else one node)."""
    ranks = int(re.search(r"(?:-n|--np) (\d+)", cmd).group(1))  # type: ignore[union-attr]
    ppn = re.search(r"--ppn (\d+)", cmd)
    if ppn:
        return int(ppn.group(1))
    nodes = re.search(r"-N (\d+)", cmd)
    return -(-ranks // int(nodes.group(1))) if nodes else ranks


def _gpu(s: Script, site: SiteConfig) -> bool:
    return any(site.is_gpu_variant(v) for v in s.variants)


def _env_lines(s: Script) -> str:
    """What a job of the script runs before its program: the script's setup and, in an allocation
    of several variants, each variant's own lines."""
    per_variant = "\n".join(ln for lines in getattr(s.plan, "variant_setup", {}).values() for ln in lines)
    return s.text + "\n" + per_variant


def _variant_lines(s: Script, site: SiteConfig, variant: str) -> str:
    vs = getattr(s.plan, "variant_setup", {})
    return s.text + "\n" + "\n".join(vs.get(variant, [])) if vs else s.text


GTL = re.compile(r"MPICH_GPU_SUPPORT_ENABLED=1|module load [^\n]*craype-accel-")


# ----------------------------------------------------------------------------- the checks


def check_gtl(r: Rendered) -> list[str]:
    bad = []
    for s in r.scripts:
        for v in s.variants:
            lines = _variant_lines(s, r.site, v)
            merged = bool(getattr(s.plan, "variant_setup", {}))
            own = "\n".join(s.plan.variant_setup[v]) if merged else lines  # type: ignore[attr-defined]
            if r.site.is_gpu_variant(v):
                if not GTL.search(own) or "MPICH_GPU_SUPPORT_ENABLED=1" not in own:
                    bad.append(f"{s.label}: GPU variant {v} without GPU-aware MPI and its accel module")
            elif GTL.search(lines if not merged else s.text + "\n" + own):
                bad.append(f"{s.label}: CPU variant {v} gets GPU-aware MPI or a craype-accel module")
    return bad


def check_queues(r: Rendered) -> list[str]:
    bad, per_queue = [], {}
    for s in r.scripts:
        part, nodes = s.plan.partition, s.plan.node_count()
        if part is None:
            bad.append(f"{s.label}: no queue")
            continue
        if part.refuses(nodes):
            bad.append(f"{s.label}: {part.refuses(nodes)} ({nodes} asked)")
        if s.plan.walltime_min > part.walltime_cap(nodes):
            bad.append(f"{s.label}: {s.plan.walltime_min} min on {nodes} nodes, queue {part.name} gives "
                       f"{part.walltime_cap(nodes)}")
        per_queue.setdefault((s.label, part.name), []).append(len(s.plan.jobs) if not isinstance(s.plan, PackPlan)
                                                              else 1)
    for (label, qname), counts in per_queue.items():
        part = next(p for p in r.site.partitions if p.name == qname)
        if part.user_job_limit and sum(counts) > part.user_job_limit:
            bad.append(f"{label}: {sum(counts)} jobs in queue {qname}, {part.user_job_limit} allowed per user")
    for label, why in r.refused:  # a refusal must name a queue rule, not fail some other way
        if "docs/sites.md" not in why:
            bad.append(f"{label}: refused without naming a rule: {why}")
    return bad


def check_pbs_array_rerunnable(r: Rendered) -> list[str]:
    bad = []
    for s in r.scripts:
        if _directive(s.text, "J") and _directive(s.text, "r") != ["y"]:
            bad.append(f"{s.label}: array with -r {_directive(s.text, 'r')}")
    return bad


def check_pbs_select(r: Rendered) -> list[str]:
    bad = []
    for s in r.scripts:
        for sel in re.findall(r"^#PBS -l select=(.+)$", s.text, re.M):
            if not re.fullmatch(r"[1-9]\d*(:\w+=[\w.\-]+)*", sel):
                bad.append(f"{s.label}: select={sel}")
            elif int(sel.split(":")[0]) != s.plan.node_count():
                bad.append(f"{s.label}: select={sel} for {s.plan.node_count()} nodes")
        for wt in re.findall(r"^#PBS -l walltime=(.+)$", s.text, re.M):
            if not re.fullmatch(r"\d{2,}:[0-5]\d:[0-5]\d", wt):
                bad.append(f"{s.label}: walltime={wt}")
    return bad


def check_pbs_queue_known(r: Rendered) -> list[str]:
    names = {p.queue for p in r.site.partitions}
    return [f"{s.label}: -q {q}" for s in r.scripts for q in _directive(s.text, "q") if q not in names]


def check_alcf_filesystems(r: Rendered) -> list[str]:
    want = {"polaris": "home:eagle", "aurora": "home:flare"}[r.site.name]
    return [f"{s.label}: filesystems {_directive(s.text, 'l')}" for s in r.scripts
            if f"#PBS -l filesystems={want}" not in s.text]


def check_alcf_whole_nodes(r: Rendered) -> list[str]:
    bad = []
    threads = {"polaris": 64, "aurora": 208}[r.site.name]
    for s in r.scripts:
        sel = re.search(r"^#PBS -l select=(.+)$", s.text, re.M)
        if sel is None or f":ncpus={threads}" not in sel.group(1) or "ngpus" in sel.group(1):
            bad.append(f"{s.label}: select {sel.group(1) if sel else None}")
        elif r.site.name == "polaris" and "system=polaris" not in sel.group(1):
            bad.append(f"{s.label}: select without system=polaris")
    return bad


def check_pbs_whole_node_cores(r: Rendered) -> list[str]:
    """Each packed allocation's driver, started in the environment OpenPBS's MoM gives the script
    (NCPUS from its select), takes as many cores a node as were planned."""
    from types import SimpleNamespace

    from hpcbench.executors.pack import manifest_for
    from hpcbench.jobs.pack import PackDriver
    from hpcbench.schedulers.base import view_for
    from tests.clusters import mom_env

    bad = []
    for i, s in enumerate(r.scripts):
        if not isinstance(s.plan, PackPlan):
            continue
        tmp = Path(tempfile.mkdtemp(dir=SESSION))
        _, m = manifest_for(s.plan, SimpleNamespace(root=tmp, specs_dir=tmp, work_dir=tmp), r.site, f"k{i}", None,
                            "python3")
        script = tmp / "job.sh"
        script.write_text(s.text)
        env = {**mom_env(script, tmp, f"{i}.pbs"), "PBS_JOBID": f"{i}.pbs"}
        d = PackDriver(m, view_for(r.site.scheduler, env))
        if d.cpn != s.plan.cores_per_node:
            bad.append(f"{s.label}: the driver takes {d.cpn} cores a node of the {s.plan.cores_per_node} planned "
                       f"(NCPUS={env['NCPUS']})")
        bad += [f"{s.label}: {w}" for w in d.warnings if w.startswith("NCPUS")]
    return bad


def check_pbs_array_parallelism(r: Rendered) -> list[str]:
    """An array one subjob longer than the cap (the site's per-user limits lifted: its debug
    queues take one job a user, so the rendered scenarios never hold such an array)."""
    cap = r.site.batch.array_parallelism
    tmp = Path(tempfile.mkdtemp(dir=SESSION))
    lifted = site_copy(r.site.name, tmp, no_user_limits)
    out = Rendered(lifted)
    cpu = next(v.name for v in lifted.variants if not v.is_gpu())
    render(lifted, tmp, "array", [job_spec(lifted, tmp, f"j{i}", cpu, [1]) for i in range(cap + 1)], False, None, out)
    if not out.scripts:
        return [f"no array rendered: {out.refused}"]
    bad = []
    for s in out.scripts:
        m = re.search(r"^#PBS -J 0-(\d+)(%\d+)?$", s.text, re.M)
        if m and int(m.group(1)) + 1 > cap and m.group(2) != f"%{cap}":
            bad.append(f"{s.label}: -J 0-{m.group(1)}{m.group(2) or ''} with array_parallelism {cap}")
    return bad


def check_pbs_kill_delay(r: Rendered) -> list[str]:
    from hpcbench.schedulers.base import view_for

    grace = view_for(r.site.scheduler, {}).stop_grace_s
    return [] if grace < 10 else [f"the driver's grace is {grace:g} s, PBS kills at 10 s"]


def check_pbs_walltime_warning(r: Rendered) -> list[str]:
    """Each script's job (array subjob or packed driver) under the walltime the script exports arms its
    own warning before it (PBS sends none)."""
    import signal

    from hpcbench.jobs import interrupt

    bad = []
    for s in r.scripts:
        m = re.search(rf"^export {interrupt.WALLTIME_ENV}=(\d+)$", s.text, re.M)
        if m is None:
            bad.append(f"{s.label}: no {interrupt.WALLTIME_ENV} exported")
            continue
        env = {"HPCBENCH_SCHEDULER": r.site.scheduler, interrupt.WALLTIME_ENV: m.group(1)}
        try:
            at = interrupt.warn_before_walltime(lambda signum, frame: None, env)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
        if not 0 < at < int(m.group(1)):
            bad.append(f"{s.label}: no warning armed before the walltime ({m.group(1)} s)")
    return bad


def check_pbs_step_env(r: Rendered) -> list[str]:
    from hpcbench.jobs.sandbox import step_env
    from tests.clusters import mom_env

    bad = []
    keep = {"PBS_NODEFILE", "PBS_JOBID", "CRAYPE_LINK_TYPE", "MPIR_CVAR_ENABLE_GPU", "KOKKOS_NUM_THREADS"}
    for i, s in enumerate(r.scripts[:3]):
        tmp = Path(tempfile.mkdtemp(dir=SESSION))
        script = tmp / "job.sh"
        script.write_text(s.text)
        env = {**mom_env(script, tmp, f"{i}.pbs"), "PBS_JOBID": f"{i}.pbs", "HPCBENCH_SCHEDULER": r.site.scheduler,
               "CRAYPE_LINK_TYPE": "dynamic", "MPIR_CVAR_ENABLE_GPU": "1", "KOKKOS_NUM_THREADS": "1"}
        lost = keep - set(step_env({}, env))
        if lost:
            bad.append(f"{s.label}: a step loses {sorted(lost)}")
    return bad


def check_pbs_build_on_its_node(r: Rendered) -> list[str]:
    """A packed job on the allocation's second node builds there: the build line its job would run."""
    from hpcbench.jobs.placement import PackContext, build_launch

    bad = []
    for s in r.scripts:
        if not isinstance(s.plan, PackPlan) or s.plan.nodes < 2:
            continue
        for v in s.variants:
            ctx = PackContext(r.site.scheduler, ("node1",), 1, tempfile.mkdtemp(dir=SESSION), driver_host="node0")
            argv = build_launch(r.site.launcher_for(v), [3], ctx)
            if "--hostfile" not in argv or "--cpu-bind" not in argv or argv[argv.index("--cpu-bind") + 1] != "list:3":
                bad.append(f"{s.label}: variant {v}'s build on node1 is {argv}")
    return bad


def check_pals_launch(r: Rendered) -> list[str]:
    bad = []
    for s in r.scripts:
        for cmd in s.launches:
            if not cmd.startswith("mpiexec") or "--ppn" not in cmd:
                bad.append(f"{s.label}: {cmd}")
            elif isinstance(s.plan, PackPlan) and "--hostfile" not in cmd:
                bad.append(f"{s.label}: packed run without --hostfile: {cmd}")
    return bad


def _queue_values(r: Rendered, want: dict[str, dict]) -> list[str]:
    bad = []
    for qname, values in want.items():
        part = next((p for p in r.site.partitions if p.name == qname), None)
        if part is None:
            bad.append(f"no queue {qname}")
            continue
        for k, v in values.items():
            got = [b.model_dump() for b in part.walltime_bins] if k == "walltime_bins" else getattr(part, k)
            if got != v:
                bad.append(f"queue {qname}: {k} = {got}, the documentation says {v}")
    return bad


def check_polaris_queues(r: Rendered) -> list[str]:
    return _queue_values(r, {"debug": {"min_nodes": 1, "max_nodes": 2, "max_walltime_min": 60},
                             "debug-scaling": {"min_nodes": 1, "max_nodes": 10, "max_walltime_min": 60,
                                               "user_job_limit": 1}})


def check_polaris_debug_user(r: Rendered) -> list[str]:
    bad = _queue_values(r, {"debug": {"max_running_per_user": 1, "max_queued_per_user": 1}})
    merged = [s for s in r.scripts if s.label == "all variants packed"]
    if len(merged) != 1:
        bad.append(f"a campaign of every variant gets {len(merged)} debug allocations, 1 allowed")
    return bad


def check_polaris_prod(r: Rendered) -> list[str]:
    return _queue_values(r, {"prod": {"min_nodes": 10, "max_nodes": 496, "walltime_bins": [
        {"max_nodes": 24, "max_walltime_min": 180}, {"max_nodes": 99, "max_walltime_min": 360},
        {"max_nodes": 496, "max_walltime_min": 1440}]}})


def _node_values(r: Rendered, **want) -> list[str]:
    bad = []
    for p in r.site.partitions:
        if "gpu" in want and p.constraint == "cpu":
            continue
        for k, v in want.items():
            if k != "gpu" and getattr(p, k) != v:
                bad.append(f"queue {p.name}: {k} = {getattr(p, k)}, the documentation says {v}")
    return bad


def check_polaris_node(r: Rendered) -> list[str]:
    return _node_values(r, cores_per_node=32, threads_per_core=2, gpus_per_node=4)


def check_polaris_prgenv(r: Rendered) -> list[str]:
    return [f"{s.label}: no PrgEnv-gnu" for s in r.scripts if "module swap PrgEnv-nvidia PrgEnv-gnu" not in s.text]


def check_polaris_gpu_bind(r: Rendered) -> list[str]:
    bad = []
    for s in r.scripts:
        for cmd in s.launches:
            gpu_run = " -vec_type cuda" in cmd or "gpu_bind" in cmd
            if not gpu_run:
                continue
            if "-m hpcbench.jobs.gpu_bind CUDA_VISIBLE_DEVICES 3,2,1,0 " not in cmd:
                bad.append(f"{s.label}: GPU run without a GPU per rank: {cmd}")
            if _ranks_per_node(cmd) > 4:
                bad.append(f"{s.label}: {_ranks_per_node(cmd)} ranks on a 4-GPU node: {cmd}")
    return bad


def _runtime_flaws(r: Rendered, want: Callable[[str], bool]) -> list[str]:
    """Each packed allocation's driver started in the MoM's environment, runs of each of its variants
    side by side on a node (a rank a GPU slot, else two-rank runs on eight cores), and each
    variant's unpacked run at a node's ranks: what tests/pbs_runtime.flaws finds that `want` keeps."""
    from tests.pbs_runtime import Allocation, flaws, spec_for, unpacked_run

    bad: list[str] = []
    tmp = Path(tempfile.mkdtemp(dir=SESSION))
    for s in r.scripts:
        if not isinstance(s.plan, PackPlan) or s.plan.nodes > 16:
            continue
        alloc = Allocation.start(r.site, s.plan, s.text, tmp)
        for v in sorted(s.variants):
            gpus = len(r.site.node_layout(v).gpus) if r.site.is_gpu_variant(v) else 0
            ranks = 1 if gpus else 2
            spec = spec_for(r.site, job_spec(r.site, tmp, f"{v}-rt", v, [ranks]))
            runs = alloc.runs(spec, ranks, gpus or 8)
            bad += [f"{s.label}: {f}" for f in flaws(r.site, v, runs, 1, r.site.ranks_per_node(v)) if want(f)]
    for v in r.site.variants:
        rpn = r.site.ranks_per_node(v.name)
        run = unpacked_run(r.site, spec_for(r.site, job_spec(r.site, tmp, f"{v.name}-u", v.name, [rpn])), rpn)
        bad += [f"unpacked {v.name}: {f}" for f in flaws(r.site, v.name, [run], 1, rpn) if want(f)]
    return bad


def check_pbs_dry_run_binding(r: Rendered) -> list[str]:
    return [f"{s.label}: {cmd}" for s in r.scripts if isinstance(s.plan, PackPlan) for cmd in s.launches
            if "--cpu-bind list:" not in cmd or "--cpu-bind depth" in cmd]


def check_pals_own_list(r: Rendered) -> list[str]:
    return _runtime_flaws(r, lambda f: " share " in f or "reserved" in f)


def check_polaris_gpu_near(r: Rendered) -> list[str]:
    return _runtime_flaws(r, lambda f: "far from its GPU" in f)


def check_aurora_queues(r: Rendered) -> list[str]:
    return _queue_values(r, {"debug": {"min_nodes": 1, "max_nodes": 2, "max_walltime_min": 60, "user_job_limit": 1},
                             "debug-scaling": {"min_nodes": 2, "max_nodes": 256, "max_walltime_min": 60,
                                               "user_job_limit": 1}}) + (
        [] if len([s for s in r.scripts if s.label == "all variants packed"]) == 1
        else ["a campaign of every variant gets more than the one debug job a user may have"])


def check_aurora_prod(r: Rendered) -> list[str]:
    return _queue_values(r, {"prod": {"min_nodes": 256, "max_nodes": 10624, "walltime_bins": [
        {"max_nodes": 1024, "max_walltime_min": 720}, {"max_nodes": 1999, "max_walltime_min": 1080},
        {"max_nodes": 10624, "max_walltime_min": 1440}]}})


def check_aurora_node(r: Rendered) -> list[str]:
    return _node_values(r, cores_per_node=102, reserved_cores=[0, 52], threads_per_core=2, gpus_per_node=6,
                        tiles_per_gpu=2)


def check_aurora_pe(r: Rendered) -> list[str]:
    return [f"{s.label}: frameworks module or FLAT hierarchy" for s in r.scripts
            if "frameworks" in _env_lines(s) or "ZE_FLAT_DEVICE_HIERARCHY=FLAT" in _env_lines(s)]


def check_aurora_tiles(r: Rendered) -> list[str]:
    bad = []
    for s in r.scripts:
        for v in s.variants:
            if r.site.is_gpu_variant(v) and "ZE_FLAT_DEVICE_HIERARCHY=COMPOSITE" not in _variant_lines(s, r.site, v):
                bad.append(f"{s.label}: variant {v} without ZE_FLAT_DEVICE_HIERARCHY=COMPOSITE")
        for cmd in s.launches:
            if "-vec_type kokkos" in cmd and (f"-m hpcbench.jobs.gpu_bind ZE_AFFINITY_MASK {TILE_COMPACT} " not in cmd
                                              or _ranks_per_node(cmd) > 12):
                bad.append(f"{s.label}: {cmd}")
    return bad


# gpu_tile_compact.sh's rule (ALCF's Aurora PE): local rank r on tile r % 2 of GPU r // 2
TILE_COMPACT = ",".join(f"{g}.{t}" for g in range(6) for t in range(2))


def _cores(spec: str) -> set[int]:
    out: set[int] = set()
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        out |= set(range(int(lo), int(hi or lo) + 1))
    return out


def check_aurora_socket_bind(r: Rendered) -> list[str]:
    bad = []
    for s in r.scripts:
        for cmd in s.launches:
            if "-vec_type kokkos" not in cmd:
                continue
            m = re.search(r"--cpu-bind[= ]list:(\S+)", cmd)
            if not m:
                bad.append(f"{s.label}: GPU run without --cpu-bind list: {cmd}")
                continue
            sets = [{c % 104 for c in _cores(x)} for x in m.group(1).split(":")]  # CPU c is core c mod 104
            for i, cores in enumerate(sets):
                socket = range(1, 52) if (i % 12) < 6 else range(53, 104)  # tiles of GPUs 0-2 / 3-5
                if not cores <= set(socket) or cores & {0, 52, 104, 156}:
                    bad.append(f"{s.label}: rank {i} on cores {sorted(cores)}: {cmd}")
    return bad


def check_frontier_bins(r: Rendered) -> list[str]:
    return _queue_values(r, {"batch": {"walltime_bins": [
        {"max_nodes": 91, "max_walltime_min": 120}, {"max_nodes": 183, "max_walltime_min": 360},
        {"max_nodes": 9472, "max_walltime_min": 720}]}})


def check_frontier_user(r: Rendered) -> list[str]:
    return _queue_values(r, {"batch": {"max_queued_per_user": 100}})


def check_frontier_debug(r: Rendered) -> list[str]:
    return _queue_values(r, {"debug": {"qos": "debug", "max_walltime_min": 120, "user_job_limit": 1}})


def check_frontier_node(r: Rendered) -> list[str]:
    return _node_values(r, cores_per_node=56, reserved_cores=[0, 8, 16, 24, 32, 40, 48, 56], threads_per_core=2,
                        gpus_per_node=8)


def check_frontier_threads(r: Rendered) -> list[str]:
    return [f"{s.label}: {cmd}" for s in r.scripts for cmd in s.launches
            if " -c 1 " not in cmd or "threads-per-core=2" in cmd]


def check_frontier_gpu_bind(r: Rendered) -> list[str]:
    return [f"{s.label}: {cmd}" for s in r.scripts for cmd in s.launches if "-vec_type kokkos" in cmd
            and ("--gpus-per-task=1 --gpu-bind=closest" not in cmd or _ranks_per_node(cmd) > 8)]


def check_frontier_install(r: Rendered) -> list[str]:
    return [f"variant {v.name}: PETSc at {v.petsc_dir}" for v in r.site.variants
            if v.petsc_dir.startswith("/lustre/orion") or not v.petsc_dir.startswith("/ccs/proj/")]


def check_perlmutter_qos(r: Rendered) -> list[str]:
    bad = _queue_values(r, {"debug": {"qos": "debug", "max_nodes": 8, "max_walltime_min": 30,
                                      "max_running_per_user": 2, "max_queued_per_user": 5},
                            "regular": {"qos": "regular"}})
    return bad + [f"{s.label}: no --qos" for s in r.scripts if "#SBATCH --qos=" not in s.text]


def check_perlmutter_no_partition(r: Rendered) -> list[str]:
    bad = [f"{s.label}: names a partition" for s in r.scripts if "--partition" in s.text or "#SBATCH -p " in s.text]
    bad += [f"{s.label}: no --constraint" for s in r.scripts if "#SBATCH --constraint=" not in s.text]
    if isinstance(r.login_launch, list) and "-p" in r.login_launch:
        bad.append(f"doctor's srun names a partition: {r.login_launch}")
    return bad


def check_perlmutter_node(r: Rendered) -> list[str]:
    bad = []
    for p in r.site.partitions:
        want = (128, 0) if p.constraint == "cpu" else (64, 4)
        if (p.cores_per_node, p.gpus_per_node, p.threads_per_core) != (*want, 2):
            bad.append(f"queue {p.name}: {p.cores_per_node} cores, {p.gpus_per_node} GPUs, {p.threads_per_core} "
                       f"threads per core; the documentation says {want[0]}, {want[1]}, 2")
    return bad


def check_perlmutter_c(r: Rendered) -> list[str]:
    return [f"{s.label}: {cmd}" for s in r.scripts for cmd in s.launches
            if " -c 2 " not in cmd or "--cpu-bind=cores" not in cmd]


def check_perlmutter_gpu_bind(r: Rendered) -> list[str]:
    return [f"{s.label}: {cmd}" for s in r.scripts for cmd in s.launches if "-vec_type cuda" in cmd
            and ("--gpus-per-task=1" not in cmd or _ranks_per_node(cmd) > 4)]


def check_slurm_signal(r: Rendered) -> list[str]:
    return [f"{s.label}: no --signal=B:USR2" for s in r.scripts
            if f"#SBATCH --signal=B:USR2@{r.site.batch.signal_margin_s}" not in s.text]


def check_slurm_step_exact(r: Rendered) -> list[str]:
    return [f"{s.label}: {cmd}" for s in r.scripts if isinstance(s.plan, PackPlan) for cmd in s.launches
            if "--overcommit" not in cmd and not re.match(r"srun --exact -N \d+ --nodelist=\S+ ", cmd)]


def check_isolation_site(r: Rendered) -> list[str]:
    bad = []
    if r.site.isolation == "none":
        try:
            require_trust(r.site, ["samples"], None, trust=False)
            bad.append("isolation none and an agent's programs were not refused")
        except HpcbenchError:
            pass
        try:
            require_trust(r.site, ["samples"], None, trust=True)
            require_trust(r.site, ["reference"], None, trust=False)
        except HpcbenchError as e:
            bad.append(f"refused what it should run: {e}")
    return bad


def _packed(r: Rendered) -> list[Script]:
    return [s for s in r.scripts if isinstance(s.plan, PackPlan)]


BUILD_STEP = re.compile(r"srun --exact -N 1 --nodelist=\S+ -n 1 -c \d+ --cpu-bind=cores --mem=0 --gres=none "
                        r"--job-name=hpcbench-build ")


def check_slurm_build_step(r: Rendered) -> list[str]:
    bad = []
    for s in _packed(r):
        builds = [cmd for cmd in s.launches if "hpcbench-build" in cmd]
        if len(builds) != len(s.plan.jobs) or not all(BUILD_STEP.match(b) for b in builds):
            bad.append(f"{s.label}: {len(s.plan.jobs)} jobs, builds {builds}")
    return bad


def check_slurm_step_mem(r: Rendered) -> list[str]:
    from hpcbench.jobs.binding import Binding, apply_binding

    bad = []
    for s in _packed(r):
        for cmd in s.launches:
            if cmd.startswith("srun") and "hpcbench-build" not in cmd:
                bound = apply_binding("srun", cmd.split(), 1, Binding(cores=((0,),)), None)[0]
                if "--mem=0" not in bound or any(a.startswith("--mem-per-cpu") for a in bound):
                    bad.append(f"{s.label}: {' '.join(bound)}")
    return bad


def check_sweep_nodes(r: Rendered) -> list[str]:
    bad = []
    for s in (s for s in r.scripts if s.label.endswith("sweep labelled nodes")):
        if s.plan.node_count() < 2:
            bad.append(f"{s.label}: an allocation of {s.plan.node_count()} node for a point labelled 2")
        for line in plan_launch_lines(s.plan, r.site):
            if "-nodes2 " in line and not (" -N 2 " in line or "node0+node1" in line):
                bad.append(f"{s.label}: {line.strip()}")
            if "-nodes1 " in line and (" -N 2 " in line or "node0+node1" in line):
                bad.append(f"{s.label}: the 1-node point spans 2: {line.strip()}")
    labelled = [s for s in r.scripts if s.label.endswith("sweep labelled nodes")]
    return bad or ([] if labelled else ["no labelled sweep rendered"])


def check_sweep_docs(r: Rendered) -> list[str]:
    from hpcbench.problem import load_problems
    from hpcbench.sweep.plan import SweepRefused, make_plan
    from tests.test_sweep import doc_sweeps

    bad = []
    for ex in (e for e in doc_sweeps() if e.get("--site") == r.site.name):
        num = lambda k, ex=ex: [int(v) for v in ex[k].split(",")] if k in ex else None  # noqa: E731
        mode = ex.get("--mode", "strong")
        try:
            make_plan(load_problems(None, ex["--problems"].split(",")), r.site, ranks=num("--ranks"),
                      nodes=num("--nodes"), sizes=num("--sizes"),
                      modes=["strong", "weak"] if mode == "both" else [mode])
        except SweepRefused as e:
            bad.append(f"docs/sweeps.md {ex}: {e.reasons[:2]}")
    return bad


def check_pack_slots_local(r: Rendered) -> list[str]:
    from hpcbench.jobs.pack import PackDriver, PackManifest
    from hpcbench.jobs.slots import node_local_root
    from hpcbench.schedulers.base import view_class, view_for

    work = Path(tempfile.mkdtemp(prefix="conformance-"))
    m = PackManifest(scheduler=r.site.scheduler, variant="cpu", specs=[], cores_per_node=2, work_dir=str(work),
                     summary=str(work / "s.json"))
    job_id = view_class(r.site.scheduler).job_id_env
    root = PackDriver(m, view_for(r.site.scheduler, {job_id: "7"})).slots_root
    return [] if root.parent == node_local_root() and not root.is_relative_to(work) else [f"slots in {root}"]


def check_scheduler_poll(r: Rendered) -> list[str]:
    from hpcbench.executors.batch import END_POLL_S

    bad = [f"batch.poll_s {r.site.batch.poll_s} s"] if r.site.batch.poll_s < 10 else []
    return bad + ([f"END_POLL_S {END_POLL_S}"] if END_POLL_S < 10 else [])


def check_step_cap(r: Rendered) -> list[str]:
    from hpcbench.executors.pack import manifest_for

    bad = [f"batch.max_steps {r.site.batch.max_steps}"] if r.site.batch.max_steps > 100 else []
    campaign = Campaign(Path(tempfile.mkdtemp(prefix="conformance-")))
    for s in _packed(r):
        m = manifest_for(s.plan, campaign, r.site, "k", None, "python")[1]  # type: ignore[arg-type]
        if m.max_steps != r.site.batch.max_steps:
            bad.append(f"{s.label}: the driver keeps {m.max_steps} jobs in flight")
    return bad


def check_slurm_wckey(r: Rendered) -> list[str]:
    want = getattr(r.site.batch, "wckey", "")
    return [f"{s.label}: {line}" for s in r.scripts for line in s.text.splitlines()
            if line.startswith("#SBATCH --wckey") and line != f"#SBATCH --wckey={want}"]


PERLMUTTER_CPU = ["module unload craype-accel-nvidia80", "module load cpu", "unset CRAY_ACCEL_TARGET",
                  "unset MPICH_GPU_SUPPORT_ENABLED"]


def check_perlmutter_cpu_env(r: Rendered) -> list[str]:
    bad = []
    for s in r.scripts:
        merged = getattr(s.plan, "variant_setup", {})
        lines = merged["cpu"] if "cpu" in merged else s.text.splitlines()
        if "cpu" in s.variants and [ln for ln in lines if ln in PERLMUTTER_CPU] != PERLMUTTER_CPU:
            bad.append(f"{s.label}: the CPU variant's lines lack {PERLMUTTER_CPU}")
        if "cpu" not in s.variants and "module load cpu" in s.text:
            bad.append(f"{s.label}: a GPU job loads the cpu module")
    return bad


def check_job_cores(r: Rendered) -> list[str]:
    bad = []
    for v in r.site.variants:
        part = r.site.partition_for(v.name)
        rpn = r.site.ranks_per_node(v.name)
        for width, nodes in ((1, 1), (rpn + 1, 2)):
            got = r.site.job_cores(v.name, width)
            if part is None or got != part.cores_per_node * nodes:
                bad.append(f"variant {v.name}: a {width}-rank job gets {got} cores")
    return bad


def _spack(rule: str) -> Callable[[Rendered], list[str]]:
    """A rule of the site's Spack environment (spack/<site>/spack.yaml), checked in tests/test_spack_envs.py."""
    def check(r: Rendered) -> list[str]:
        from tests.test_spack_envs import FINDINGS
        return FINDINGS[rule](r.site.name)
    return check


check_spack_gtl = _spack("spack-gtl")
check_spack_oneapi = _spack("spack-oneapi")
check_spack_rocm_externals = _spack("spack-rocm-externals")
check_spack_versions = _spack("spack-versions")
check_spack_build_jobs = _spack("spack-build-jobs")
check_spack_roots = _spack("spack-roots")


def _slurm_runtime_flaws(r: Rendered) -> list[str]:
    """Each packed allocation (up to 16 nodes) started as sbatch starts it, a node's worth of one-rank
    runs of each of its variants side by side (a rank a GPU, else eight) and a build beside them, and
    each variant's unpacked one-rank run: what tests/slurm_runtime.flaws finds (a step that would
    wait, shared CPUs or GPUs, a rank far from its GPU, a specialized core)."""
    from tests.pbs_runtime import spec_for
    from tests.slurm_runtime import Allocation, flaws, unpacked_run
    from tests.test_doctor_machine import LOGIN_DEFAULTS

    bad: list[str] = []
    tmp = Path(tempfile.mkdtemp(dir=SESSION))
    login = LOGIN_DEFAULTS[r.site.name]
    for s in r.scripts:
        if isinstance(s.plan, PackPlan) and s.plan.nodes <= 16:
            alloc = Allocation.start(r.site, s.plan, s.text, tmp, login)
            try:
                for v in sorted(s.variants):
                    part = r.site.partition_for(v)
                    gpus = part.gpus_per_node if part and r.site.is_gpu_variant(v) else 0
                    spec = spec_for(r.site, job_spec(r.site, tmp, f"{v}-rt", v, [1]))
                    runs = alloc.runs(spec, 1, gpus or 8) + [alloc.build(spec, alloc.driver.hosts[0])]
                    bad += [f"{s.label}: {f}" for f in flaws(r.site, v, runs, None)]
                    alloc.release()
            finally:
                alloc.close()
        elif not isinstance(s.plan, PackPlan) and s.label.endswith("unpacked 1 job"):
            v = s.plan.jobs[0].variant.name
            spec = spec_for(r.site, job_spec(r.site, tmp, f"{v}-u", v, [1]))
            bad += [f"{s.label}: {f}" for f in flaws(r.site, v, [unpacked_run(r.site, s.text, spec, 1, login)], 1)]
    return bad


def check_slurm_step_gpus(r: Rendered) -> list[str]:
    return _slurm_runtime_flaws(r)


def check_slurm_nodelist(r: Rendered) -> list[str]:
    from tests.slurm_runtime import Allocation
    from tests.test_doctor_machine import LOGIN_DEFAULTS

    bad = []
    tmp = Path(tempfile.mkdtemp(dir=SESSION))
    for s in _packed(r):
        alloc = Allocation.start(r.site, s.plan, s.text, tmp, LOGIN_DEFAULTS[r.site.name])
        if len(alloc.driver.hosts) != s.plan.nodes or len(set(alloc.driver.hosts)) != s.plan.nodes:
            bad.append(f"{s.label}: {s.plan.nodes} nodes asked, the driver sees {len(alloc.driver.hosts)} "
                       f"({alloc.env['SLURM_JOB_NODELIST']})")
        alloc.close()
    return bad


def check_doctor_gtl(r: Rendered) -> list[str]:
    from tests.test_doctor_machine import gtl_findings
    return gtl_findings(r.site, Path(tempfile.mkdtemp(prefix="conformance-")))


def check_doctor_ncpus(r: Rendered) -> list[str]:
    from tests.test_doctor_machine import ncpus_findings
    return ncpus_findings(r.site, Path(tempfile.mkdtemp(prefix="conformance-")))


def check_doctor_inherited_env(r: Rendered) -> list[str]:
    from tests.test_doctor_machine import inherited_env_findings
    return inherited_env_findings(r.site)


CHECKS: dict[str, Callable[[Rendered], list[str]]] = {
    name[len("check_"):].replace("_", "-"): fn for name, fn in globals().items() if name.startswith("check_")}


def applies(rule: str, site: str) -> bool:
    sites = RULES[rule][0]
    return sites == "all four" or site in [s.strip() for s in sites.split(",")]


# ----------------------------------------------------------------------------- the tests


def test_every_rule_has_a_check_and_every_check_a_rule():
    assert RULES, "docs/sites.md has no rules table"
    assert sorted(set(RULES) - set(CHECKS)) == [], "rules of docs/sites.md without a check"
    assert sorted(set(CHECKS) - set(RULES)) == [], "checks without a rule in docs/sites.md"


@pytest.mark.parametrize("site,rule", [(s, r) for s in SITES for r in sorted(RULES) if applies(r, s)])
def test_site_follows_rule(site, rule):
    r = rendered(site)
    assert r.scripts, f"{site}: nothing rendered ({r.refused})"
    bad = CHECKS[rule](r)
    sites, text, source = RULES[rule]
    assert not bad, f"{site} breaks rule [{rule}] {text}\n  source: {source}\n  " + "\n  ".join(bad)


def test_scenarios_cover_cpu_gpu_packed_unpacked_submit_sweep_and_widest():
    for site in SITES:
        r = rendered(site)
        labels = {s.label for s in r.scripts} | {label for label, _ in r.refused}
        gpu = next(v.name for v in r.site.variants if v.is_gpu())
        for want in ("cpu submit packed 1 node", f"{gpu} submit packed 1 node", "cpu submit unpacked 1 job",
                     f"{gpu} sweep", "all variants packed"):
            assert want in labels, (site, want, sorted(labels))
        wide = [s for s in r.scripts if "nodes" in s.label and "1 node" not in s.label]
        assert wide and max(s.plan.node_count() for s in wide) > 1, site


def site_copy(name: str, tmp: Path, edit: Callable[[dict], None]) -> SiteConfig:
    raw = yaml.safe_load((ROOT / "site-configs" / f"{name}.yaml").read_text())
    edit(raw)
    p = tmp / f"{name}-planted.yaml"
    p.write_text(yaml.safe_dump(raw))
    return load_site(str(p))


def no_user_limits(raw: dict) -> None:
    """A site file's per-user job limits lifted (ALCF's debug queues take one job a user: an
    array of several subjobs is refused before it renders)."""
    for part in raw["partitions"]:
        part.update(max_running_per_user=0, max_queued_per_user=0)


def _queue(raw: dict, name: str) -> dict:
    return next(p for p in raw["partitions"] if p["name"] == name)


PLANTED: list[tuple[str, str, Callable[[dict], None]]] = [
    ("polaris", "polaris-queues", lambda raw: _queue(raw, "debug").update(max_nodes=8)),
    ("polaris", "polaris-debug-user", lambda raw: [_queue(raw, q).update(max_running_per_user=0, max_queued_per_user=0)
                                                   for q in ("debug", "debug-scaling")]),
    ("polaris", "polaris-gpu-near", lambda raw: [p.pop("gpu_cores") for p in raw["partitions"]]),
    ("polaris", "polaris-gpu-bind", lambda raw: raw["variants"][1]["launcher"].update(
        template="mpiexec --np {ranks} --ppn {ppn} --depth {depth} --cpu-bind depth")),
    ("aurora", "aurora-pe", lambda raw: raw.update(modules=["load frameworks"])),
    ("aurora", "aurora-socket-bind", lambda raw: raw["variants"][1]["launcher"].update(
        template="mpiexec -n {ranks} --ppn {ppn} --depth {depth} --cpu-bind depth gpu_tile_compact.sh")),
    ("frontier", "frontier-install", lambda raw: raw["variants"][0].update(
        petsc_dir="/lustre/orion/P/proj-shared/hpcbench/views/cpu")),
    ("frontier", "queues", lambda raw: _queue(raw, "batch").update(walltime_bins=[])),
    ("perlmutter", "perlmutter-c", lambda raw: raw["launcher"].update(depth=1)),
    ("perlmutter", "perlmutter-cpu-env", lambda raw: raw["variants"][0].pop("setup")),
    ("polaris", "scheduler-poll", lambda raw: raw["batch"].update(poll_s=0.5)),
    ("frontier", "step-cap", lambda raw: raw["batch"].update(max_steps=500)),
    ("perlmutter", "perlmutter-no-partition", lambda raw: [p.pop("submit_as") for p in raw["partitions"]]),
]


@pytest.mark.parametrize("site,rule,edit", PLANTED, ids=[f"{s}-{r}" for s, r, _ in PLANTED])
def test_checks_catch_planted_defects(site, rule, edit, tmp_path):
    """Each check fails on a site file with the defect its rule forbids (the checks can fail)."""
    planted = site_copy(site, tmp_path, edit)
    r = render_site(site, tmp_path, planted)
    if rule == "queues":  # a walltime bin removed: the check holds the plan to the documented bins instead
        assert check_frontier_bins(r)
        return
    assert CHECKS[rule](r), f"[{rule}] passed on a planted defect"


def test_the_old_pbs_array_script_breaks_the_rule():
    """main at cf18e6d wrote `-r n` under `-J`: the check says so (and the stand-in refuses it:
    tests/test_pbs_standin.py)."""
    plan = rendered("polaris").scripts[0].plan
    old = Script("old array", plan, "#!/bin/bash\n#PBS -J 0-1\n#PBS -r n\n", [])
    assert check_pbs_array_rerunnable(Rendered(load_site("polaris"), [old]))


def test_gpu_aware_mpi_on_a_cpu_variant_is_refused_by_the_loader(tmp_path):
    """main at cf18e6d exported MPICH_GPU_SUPPORT_ENABLED=1 for every variant of Polaris and Frontier."""
    for edit in (lambda raw: raw.update(env={"MPICH_GPU_SUPPORT_ENABLED": "1"}),
                 lambda raw: raw["variants"][0].update(modules=["load craype-accel-amd-gfx90a"]),
                 lambda raw: raw.update(setup=["export MPICH_GPU_SUPPORT_ENABLED=1"])):
        with pytest.raises(ConfigError, match="GTL library is not linked"):
            site_copy("frontier", tmp_path, edit)


def test_no_queue_takes_the_shape_is_refused_naming_the_rule(tmp_path):
    site = site_copy("polaris", tmp_path, lambda raw: raw.update(
        partitions=[p for p in raw["partitions"] if p["name"] == "prod"],
        variants=[{**v, "partition": "prod"} for v in raw["variants"]]))
    r = render_site("polaris", tmp_path, site)
    assert not [s for s in r.scripts if s.plan.node_count() < 10]
    assert any("prod takes at least 10 nodes" in why and "docs/sites.md" in why for _, why in r.refused)


def test_a_gpu_job_wider_than_a_nodes_gpus_is_refused_unpacked_and_spans_nodes_packed(tmp_path):
    site = load_site("perlmutter")
    job = job_spec(site, tmp_path, "wide", "cuda", [16])
    r = Rendered(site)
    render(site, tmp_path, "unpacked", [job], False, None, r)
    render(site, tmp_path, "packed", [job], True, None, r)
    assert any("holds 4 (one per GPU" in why for _, why in r.refused)
    packed = next(s for s in r.scripts if s.label == "packed")
    assert packed.plan.node_count() == 4 and "#SBATCH --nodes=4" in packed.text
    assert all(_ranks_per_node(c) <= 4 for c in packed.launches), packed.launches
