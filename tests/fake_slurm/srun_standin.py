"""A STAND-IN for Slurm's `srun` inside an allocation on Frontier and Perlmutter, which cannot run
here (their nodes, and Slurm's step manager with their GPUs and core specialization, are not on
this machine; the test cluster of scripts/slurm-test-cluster.sh has neither GPUs nor L3 regions).

It is called in-process (`Steps.srun(argv, env)`): it reads the options hpcbench's launch lines and
build steps use, and the same options from the environment where the command line does not give
them, and places the step's tasks on a node model of the site as Slurm's step manager does, keeping
what every live step holds so that concurrent steps see each other. What it reproduces of real
srun, each from Slurm's man pages (srun(1), doc/man/man1/srun.1 at SchedMD/slurm 284c3b9) and
source, or from the centres' pages:

- INPUT ENVIRONMENT VARIABLES (srun(1)): "srun will read and handle the options set in the
  following environment variables ... Command line options always override environment variable
  settings": SLURM_NTASKS and SLURM_NPROCS (-n), SLURM_NNODES and SLURM_JOB_NUM_NODES (-N),
  SLURM_CPUS_PER_TASK (-c), SLURM_NTASKS_PER_NODE, SLURM_THREADS_PER_CORE, SLURM_GPUS (-G),
  SLURM_GPUS_PER_TASK, SLURM_GPUS_PER_NODE ("Same as --gpus-per-node except within an existing
  allocation, in which case it will be ignored if --gpus is specified": src/srun/opt.c),
  SLURM_EXACT, SLURM_OVERCOMMIT, SLURM_CPU_BIND, SLURM_GPU_BIND.
- `-N`, `--nodelist`: the step's nodes (within the allocation's); tasks in blocks over them
  (`-m block`, the default distribution of nodes).
- `--exact`: "Allow a step access to only the resources requested for the step. By default, all
  non-GRES resources on each node in the step allocation will be used ... Parallel steps will either
  be blocked or rejected until requested step resources are available": a step without it holds
  every CPU of its nodes; one that cannot get what it asks now is returned `blocked` (srun would
  print "Step creation temporarily disabled, retrying" and wait).
- `-c`: CPUs per task; a task gets whole cores, -c / (threads used per core) of them (stepmgr.c
  `_pick_step_cores`: cores from the CPU count and the step's CPUs per core). Threads used per core:
  `--threads-per-core` (or SLURM_THREADS_PER_CORE), else the site's default: 1 on Frontier ("Number
  of active hardware threads per core. Can be 1 or 2 (1 is default)"; "When used with
  --threads-per-core=1: -c is equivalent to physical cores per task", frontier_user_guide at
  olcf/olcf-user-docs 2745903), both on Perlmutter ("-c ... number of logical cores (CPUs) per MPI
  task", docs.nersc.gov/jobs/affinity).
- Core specialization (`-S`): the specialized cores are never given to a step (Frontier: "-S 8
  reserves the first core in each L3 region ... 56 allocatable cores", "Low-noise Mode Layout").
- GPUs first, then cores (src/stepmgr/stepmgr.c `_step_alloc_lps` calls gres_stepmgr_step_alloc
  before `_pick_step_cores`): GPUs by `--gpus-per-node` (inherited too) before `--gpus-per-task` x
  tasks on the node, before `--gpus` spread over the nodes (src/stepmgr/gres_stepmgr.c
  `_step_get_gres_needed`), the lowest free ids whose L3 region still has idle cores first
  (`_step_alloc`'s first pass, given the job's unused cores), then any free. Cores: idle ones near
  all the step's GPUs first, then near any of them, then any idle core (`_pick_step_cores`), in each
  the L3 regions (Slurm's sockets on Frontier) visited in turn, a task's cores from one region
  (`_handle_core_select`, socket-cyclic: the default; "srun -N1 -n8" puts ranks on HWT 001, 009,
  ..., 057, frontier_user_guide "CPU Mapping"). So a one-task step gets GPU 0 and a core of its
  region (Example 2: "Slurm appears to give the first GPU it sees and maps it to the CPU cores that
  are closest"; Example 9: eight concurrent one-task steps get GPUs 0..7, each its own nearest core).
- Tasks: task i on the i-th `-c`'s worth of the step's picked cores.
- `--cpu-bind` (srun(1): "[{quiet|verbose},]<type>"): `threads` ("Automatically generate masks
  binding tasks to threads": with one thread a core, the first, HWT 001), `cores` (every thread of
  its cores), `none` ("Do not bind tasks to CPUs": every CPU of the step), `map_cpu:<list>` ("Bind by
  setting CPU masks on tasks ... <cpu_id_for_task_0>,<cpu_id_for_task_1>,... elements in the list
  will be reused as needed", `0*4` repeats; a CPU the step was not given binds nothing); other
  types raise.
- A step that asks no GPUs is given all the job's on its nodes (srun(1) --gres: "By default, a job
  step is allocated all of the generic resources that have been requested by the job"; stepmgr.c
  `_copy_job_tres_to_step` copies the job's tres_per_node), unless `--gres=none` (or
  SLURM_STEP_GRES=none: "do not copy the job's GRES to the step", src/common/slurm_opt.c).
- `--gpu-bind=closest`: each task sees the step's GPU(s) on its L3 region ("GPU binding is ignored
  if there is only one task": then all the step's); `none`: every task sees all the step's GPUs on
  its node; none given with `--gpus-per-task=N`: task i its own N ("This option will implicitly set
  --tres-bind=gres/gpu:per_task:<gpus_per_task> ... that can be overridden with an explicit
  --tres-bind=gres/gpu specification", which --gpu-bind is: "it is also set in SLURM_TRES_BIND").
- `-c` on the command line implies `--exact` ("Explicitly requesting this option implies --exact").

Not modelled: memory (`--mem=0` is held to by the script rule slurm-step-mem), `--overlap`,
distributions other than the default, heterogeneous steps. An option it does not know raises, so a
launch line that changes is not placed by guess."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

# srun's options that take a value, as hpcbench's launch lines and builds use them (short, long)
_VALUED = {"-n": "ntasks", "--ntasks": "ntasks", "-N": "nodes", "--nodes": "nodes", "-c": "cpus_per_task",
           "--cpus-per-task": "cpus_per_task", "-w": "nodelist", "--nodelist": "nodelist",
           "--cpu-bind": "cpu_bind", "--cpu_bind": "cpu_bind", "--gpus-per-task": "gpus_per_task",
           "--gpus": "gpus", "-G": "gpus", "--gpus-per-node": "gpus_per_node", "--gpu-bind": "gpu_bind",
           "--mem": "mem", "--mem-per-cpu": "mem", "--mem-per-gpu": "mem", "--job-name": "job_name",
           "-J": "job_name", "--ntasks-per-node": "ntasks_per_node", "--threads-per-core": "threads_per_core",
           "--gres": "gres"}
_FLAGS = {"--exact": "exact", "--overcommit": "overcommit", "-O": "overcommit", "--quiet": "quiet", "-Q": "quiet",
          "-u": "unbuffered", "--unbuffered": "unbuffered"}
# srun(1), INPUT ENVIRONMENT VARIABLES: the variable each option is read from
_FROM_ENV: dict[str, str | tuple[str, ...]] = {
             "ntasks": ("SLURM_NTASKS", "SLURM_NPROCS"), "nodes": ("SLURM_NNODES", "SLURM_JOB_NUM_NODES"),
             "overcommit": "SLURM_OVERCOMMIT", "cpus_per_task": "SLURM_CPUS_PER_TASK",
             "ntasks_per_node": "SLURM_NTASKS_PER_NODE", "threads_per_core": "SLURM_THREADS_PER_CORE",
             "gpus": "SLURM_GPUS", "gpus_per_task": "SLURM_GPUS_PER_TASK", "gpus_per_node": "SLURM_GPUS_PER_NODE",
             "exact": "SLURM_EXACT", "cpu_bind": "SLURM_CPU_BIND", "gpu_bind": "SLURM_GPU_BIND",
             "gres": "SLURM_STEP_GRES"}


@dataclass(frozen=True)
class Node:
    """A node as Slurm hands out its CPUs and GPUs. CPU id of core k's thread t: k + t * cores."""

    cores: int
    threads: int
    regions: tuple[tuple[int, ...], ...]  # the cores of each L3 region (socket), in Slurm's order
    specialized: frozenset[int] = frozenset()  # cores of core specialization: never a step's
    gpus: int = 0
    gpu_region: tuple[int, ...] = ()  # per GPU id, its L3 region (() : no topology to bind by)
    default_threads: int = 0  # threads a task's -c counts per core unless --threads-per-core (0: all)

    def cpus(self, core: int, threads: int) -> set[int]:
        return {core + t * self.cores for t in range(threads)}

    def region_of(self, core: int) -> int:
        return next(i for i, r in enumerate(self.regions) if core in r)


@dataclass
class Task:
    host: str
    cpus: set[int]  # the CPUs it is bound to
    gpus: frozenset[int]  # the GPUs it sees


@dataclass
class Step:
    argv: list[str]
    options: dict[str, str]
    hosts: list[str]
    tasks: list[Task] = field(default_factory=list)
    cores: dict[str, set[int]] = field(default_factory=dict)  # what it holds, per host
    gpus: dict[str, set[int]] = field(default_factory=dict)
    blocked: str = ""  # why srun would wait ("" : it started)


def parse(argv: list[str], env: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """srun's options (the command line's, else the environment's) and the program."""
    if not argv or argv[0] != "srun":
        raise ValueError(f"not an srun line: {argv[:3]}")
    opts: dict[str, str] = {}
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        a = argv[i]
        name, sep, val = a.partition("=")
        if not sep and len(a) > 2 and a[:2] in _VALUED and a[1] != "-":  # -N1, -n8, -c7
            name, sep, val = a[:2], "=", a[2:]
        if name in _FLAGS and not sep:
            opts[_FLAGS[name]] = "1"
        elif name in _VALUED:
            if not sep:
                i += 1
                val = argv[i]
            opts[_VALUED[name]] = val
        else:
            raise ValueError(f"the srun stand-in does not model {a!r} (in {' '.join(argv)})")
        i += 1
    if "cpus_per_task" in opts:
        opts["exact"] = "1"  # srun(1) -c: "Explicitly requesting this option implies --exact"
    for opt, names in _FROM_ENV.items():
        var = next((v for v in ((names,) if isinstance(names, str) else names) if env.get(v, "") != ""), "")
        if opt not in opts and var:
            if opt == "gpus_per_node" and "gpus" in opts:
                continue  # srun(1): ignored within an allocation where --gpus is given
            opts[opt] = "1" if opt in ("exact", "overcommit") else env[var]
    return opts, argv[i:]


class Steps:
    """The live steps of one allocation (`hosts`, each node a `node`); `srun` starts one."""

    def __init__(self, node: Node, hosts: list[str], job_gpus: int = 0):
        self.node, self.hosts, self.job_gpus = node, hosts, job_gpus  # job_gpus: the job's GPUs a node
        self.live: list[Step] = []

    def held(self, host: str) -> tuple[set[int], set[int]]:
        cores = {c for s in self.live for c in s.cores.get(host, ())}
        gpus = {g for s in self.live for g in s.gpus.get(host, ())}
        return cores, gpus

    def srun(self, argv: list[str], env: Mapping[str, str]) -> Step:
        opts, _ = parse(argv, env)
        hosts = opts["nodelist"].split(",") if "nodelist" in opts else self.hosts[:int(opts.get("nodes", "1"))]
        if any(h not in self.hosts for h in hosts):
            raise ValueError(f"--nodelist {hosts} is not within the allocation {self.hosts[:4]}...")
        if "nodes" in opts and int(opts["nodes"]) != len(hosts):
            raise ValueError(f"-N {opts['nodes']} with {len(hosts)} nodes in --nodelist: {' '.join(argv)}")
        step = Step(argv, opts, hosts)
        ntasks = int(opts.get("ntasks", str(len(hosts))))
        per = int(opts["ntasks_per_node"]) if "ntasks_per_node" in opts else -(-ntasks // len(hosts))
        counts = [max(0, min(per, ntasks - per * k)) for k in range(len(hosts))]
        node = self.node
        tpc = int(opts.get("threads_per_core", "0")) or node.default_threads or node.threads
        cores_per_task = -(-int(opts.get("cpus_per_task", "1")) // tpc)
        exact, over = opts.get("exact") == "1", opts.get("overcommit") == "1"
        for host, n in zip(hosts, counts, strict=True):
            held_cores, held_gpus = self.held(host)
            idle = {c for r in node.regions for c in r if c not in node.specialized and c not in held_cores}
            if not exact and held_cores:
                step.blocked = f"{host}: without --exact the step takes every CPU, and other steps hold some"
                break
            gpus_needed = (int(opts["gpus_per_node"]) if "gpus_per_node" in opts
                           else int(opts["gpus_per_task"]) * n if "gpus_per_task" in opts
                           else -(-int(opts["gpus"]) // len(hosts)) if "gpus" in opts
                           else 0 if opts.get("gres", "").lower() == "none" else self.job_gpus)
            gpus = self._gpus(held_gpus, idle, gpus_needed)
            if len(gpus) < gpus_needed:
                step.blocked = (f"{host}: asks {gpus_needed} GPUs a node, {node.gpus - len(held_gpus)} free "
                                f"(other steps hold {sorted(held_gpus)})")
                break
            if n * cores_per_task > len(idle) and not over:
                step.blocked = f"{host}: asks {n * cores_per_task} cores, {len(idle)} free"
                break
            picked = self._cores(idle, gpus, n * cores_per_task, cores_per_task)
            step.tasks += self._tasks(host, picked, cores_per_task, gpus, opts)
            step.cores[host] = set(picked) if exact else {c for r in node.regions for c in r} - node.specialized
            step.gpus[host] = set(gpus)
        if not step.blocked:
            self.live.append(step)
        return step

    def end(self, step: Step) -> None:
        self.live.remove(step)

    def _gpus(self, held: set[int], idle: set[int], needed: int) -> list[int]:
        """The step's GPUs on a node (gres_stepmgr.c `_step_alloc`): the lowest free ids whose cores
        include idle ones first (its first pass, with the job's unused cores), then any free."""
        free = [g for g in range(self.node.gpus) if g not in held]
        near = [g for g in free if not self.node.gpu_region or set(self.node.regions[self.node.gpu_region[g]]) & idle]
        return (near + [g for g in free if g not in near])[:needed]

    def _cores(self, idle: set[int], gpus: list[int], count: int, per_task: int) -> list[int]:
        """The step's cores on a node (stepmgr.c `_pick_step_cores`): idle cores near all its GPUs
        first, then near any of them, then any idle core; in each, L3 regions (Slurm's sockets) in
        turn, `per_task` cores of one region a task (`_handle_core_select`, cyclic: the default)."""
        node = self.node
        regions = [node.regions[node.gpu_region[g]] for g in gpus] if gpus and node.gpu_region else []
        every = set.intersection(*(set(r) for r in regions)) if regions else set(idle)
        anyone = set().union(*(set(r) for r in regions)) if regions else set(idle)
        picked: list[int] = []
        for tier in (every, anyone, set(idle)):
            nxt = [0] * len(node.regions)
            moved = True
            while len(picked) < count and moved:
                moved = False
                for s_i, region in enumerate(node.regions):
                    in_task = 0
                    while nxt[s_i] < len(region) and len(picked) < count:
                        c = region[nxt[s_i]]
                        nxt[s_i] += 1
                        if c not in tier or c not in idle or c in picked:
                            continue
                        picked.append(c)
                        moved = True
                        in_task += 1
                        if in_task == per_task:
                            break
            if len(picked) >= count:
                break
        return picked[:count]

    def _tasks(self, host: str, picked: list[int], per: int, gpus: list[int], opts: dict) -> list[Task]:
        """Task i on the i-th `per` picked cores; its CPUs by --cpu-bind, its GPUs by --gpu-bind."""
        node = self.node
        tpc = int(opts.get("threads_per_core", "0")) or node.default_threads or node.threads
        kind = opts.get("cpu_bind", "").split(",")[-1]  # [{quiet|verbose},]<type>
        if kind not in ("", "threads", "cores", "none", "no") and not kind.startswith("map_cpu:"):
            raise ValueError(f"the srun stand-in does not model --cpu-bind={kind}")
        mapped = [int(c) for item in kind[8:].split(",") for c in
                  [item.split("*")[0]] * int(item.split("*")[1] if "*" in item else 1)] if kind.startswith("map_cpu:") \
            else []
        chunks = [picked[i:i + per] for i in range(0, len(picked), per)] or [[]]
        step_cpus = {cpu for c in picked for cpu in node.cpus(c, node.threads)}
        tasks = []
        for i, cores in enumerate(chunks):
            if mapped:  # map_cpu: task i on the list's i-th CPU (reused from the start), if the step has it
                cpus = {mapped[i % len(mapped)]} & step_cpus
            elif kind in ("none", "no"):  # not bound: every CPU of the step
                cpus = set(step_cpus)
            else:  # threads (with one thread a core: the first), cores: every thread of its cores
                cpus = {cpu for c in cores for cpu in node.cpus(c, node.threads if kind == "cores" else tpc)}
            seen = frozenset(gpus)
            bind = opts.get("gpu_bind", "").split(",")[-1]
            if bind == "closest" and len(chunks) > 1 and node.gpu_region and cores:
                region = node.region_of(cores[0])
                seen = frozenset(g for g in gpus if node.gpu_region[g] == region) or seen
            elif not bind and "gpus_per_task" in opts:  # implicit --tres-bind=gres/gpu:per_task:<n>
                k = int(opts["gpus_per_task"])
                seen = frozenset(gpus[i * k:(i + 1) * k])
            tasks.append(Task(host, cpus, seen))
        return tasks
