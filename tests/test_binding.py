"""Binding a run to the cores and GPUs it holds, in each launcher's terms (jobs/binding.py), and
which runs shared a core while they ran (hpcbench/score/contention.py). Pure: no MPI started
here (tests/test_timings.py runs them for real)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

from hpcbench.jobs.binding import Binding, apply_binding
from hpcbench.jobs.cores import NodeLayout
from hpcbench.jobs.launchers import launcher_for
from hpcbench.jobs.records import Launcher
from hpcbench.schedulers.slurm import SlurmView
from hpcbench.score.contention import Span, contended, spans_of

TWO = Binding(cores=((2, 34), (3, 35)))  # two cores of two hardware threads each


def test_open_mpi_gets_a_physical_rankfile_of_exactly_the_held_cores(tmp_path: Path):
    argv, env = apply_binding("openmpi", ["mpiexec", "-n", "3"], 3, TWO, tmp_path, ["nodeA"])
    i = argv.index("--rankfile")
    assert argv[i - 3:i] == ["--mca", "rmaps_rank_file_physical", "1"] and env == {}
    # one rank per core, round-robin when the run has more ranks than cores (oversubscribed)
    assert Path(argv[i + 1]).read_text() == "rank 0=nodeA slot=2\nrank 1=nodeA slot=3\nrank 2=nodeA slot=2\n"
    argv, _ = apply_binding("openmpi", ["mpiexec", "-n", "1"], 1, TWO, tmp_path)  # locally: this host's name
    assert Path(argv[argv.index("--rankfile") + 1]).read_text().startswith(f"rank 0={socket.gethostname()} slot=2")


def test_open_mpi_that_maps_by_itself_gets_an_ordered_cpu_list(tmp_path: Path):
    argv, _ = apply_binding("openmpi", ["mpiexec", "--np", "2", "--npernode", "2"], 2, TWO, tmp_path, ["a"])
    assert argv[-4:] == ["--cpu-list", "2,3", "--bind-to", "cpu-list:ordered"] and "--rankfile" not in argv


def test_hydra_pals_and_srun_options():
    argv, _ = apply_binding("mpich", ["mpiexec", "-n", "2"], 2, TWO, None)
    assert argv == ["mpiexec", "-n", "2", "-bind-to", "user:2+34,3+35"]
    # PALS: one list per rank, ':' between ranks, placed before Aurora's wrapper script
    argv, _ = apply_binding("pals", ["mpiexec", "--np", "2", "--ppn", "2", "gpu_tile_compact.sh"], 2, TWO, None)
    assert argv == ["mpiexec", "--np", "2", "--ppn", "2", "--cpu-bind", "list:2,34:3,35", "gpu_tile_compact.sh"]
    gpu = Binding(cores=((5, 37),), gpus=("1",), gpu_env="CUDA_VISIBLE_DEVICES")
    argv, env = apply_binding("srun", ["srun", "-n", "1"], 1, gpu, None)
    # --mem=0: the job's memory, shared with the steps beside it (srun(1) --mem), never a
    # --mem-per-cpu share that starves a big one-rank step
    assert argv == ["srun", "--cpu-bind=cores", "--cpus-per-task=2", "--mem=0", "--gpus-per-task=1",
                    "-n", "1"]
    assert env == {}  # Slurm sets the step's CUDA_VISIBLE_DEVICES itself
    argv, env = apply_binding("pals", ["mpiexec", "--np", "1"], 1, gpu, None)
    assert env == {"CUDA_VISIBLE_DEVICES": "1"} and "list:5,37" in argv


def test_a_template_that_binds_by_itself_is_left_as_written():
    b = Binding(cores=((0,),))
    argv, _ = apply_binding("openmpi", ["mpiexec", "-n", "1", "--bind-to", "socket"], 1, b, None)
    assert argv == ["mpiexec", "-n", "1", "--bind-to", "socket"] and "binds by itself" in b.notes[0]
    assert apply_binding("openmpi", ["mpiexec", "-n", "1"], 1, Binding(), None)[0] == ["mpiexec", "-n", "1"]
    # PALS: a policy (Polaris's --cpu-bind depth binds every run from core 0) gives way to the
    # run's own list; so does a list the site wrote (Aurora's fixed 1-8:9-16:... put every
    # concurrent packed run on the same cores: main at 1e0203d kept it), which stays only for a
    # run holding no cores; a wrapper's or program's own --cpu-bind is not the launcher's
    argv, _ = apply_binding("pals", ["mpiexec", "--np", "1", "--depth", "1", "--cpu-bind", "depth"], 1, b, None)
    assert argv == ["mpiexec", "--np", "1", "--depth", "1", "--cpu-bind", "list:0"]
    argv, _ = apply_binding("pals", ["mpiexec", "--np", "1", "--cpu-bind", "list:7", "w.sh", "--cpu-bind", "x"],
                            1, b, None)
    assert argv == ["mpiexec", "--np", "1", "--cpu-bind", "list:0", "w.sh", "--cpu-bind", "x"]
    argv, _ = apply_binding("pals", ["mpiexec", "--np", "1", "--cpu-bind", "list:7"], 1,
                            Binding(gpus=("0",), gpu_env="CUDA_VISIBLE_DEVICES"), None)
    assert argv == ["mpiexec", "--np", "1", "--cpu-bind", "list:7"]
    # srun: the template's --cpu-bind stays, memory and GPUs are still added
    argv, _ = apply_binding("srun", ["srun", "--cpu-bind=verbose,cores", "-n", "1"], 1,
                    Binding(cores=((0,),), gpus=("0",)), None)
    assert argv == ["srun", "--mem=0", "--gpus-per-task=1", "--cpu-bind=verbose,cores", "-n", "1"]
    # a memory request the site wrote stays the site's; a step holding no GPUs asks none of the
    # job's (srun gives a step that asks nothing all of them)
    argv, _ = apply_binding("srun", ["srun", "--mem-per-cpu=4G", "-n", "1"], 1, Binding(cores=((0,),)), None)
    assert argv == ["srun", "--cpu-bind=cores", "--gres=none", "--mem-per-cpu=4G", "-n", "1"]


def test_launcher_kinds():
    kind = lambda launcher, argv: launcher_for(launcher.binding, argv).name  # noqa: E731
    assert kind(Launcher(template="srun -n {ranks}"), ["srun", "-n", "1"]) == "srun"
    assert kind(Launcher(binding="pals"), ["mpiexec"]) == "pals"
    assert kind(Launcher(), ["mpiexec", "-n", "1"]) == "openmpi"  # this machine's Open MPI
    assert kind(Launcher(template="./run.sh {ranks}"), ["./run.sh", "1"]) == "none"
    # a build as a step of its own: Slurm places it beside the runs' --exact steps, never under one
    assert SlurmView({}).own_step(2, "nid001") == ["srun", "--exact", "-N", "1", "--nodelist=nid001", "-n", "1",
                                                   "-c", "2", "--cpu-bind=cores", "--mem=0", "--gres=none",
                                                   "--job-name=hpcbench-build", "--quiet"]


HOLD = r"""
import json, sys, time
from pathlib import Path
from hpcbench.jobs.slots import CoreSlots
with CoreSlots(Path(sys.argv[1]), 2).hold(1, gpus=int(sys.argv[3])) as held:
    Path(sys.argv[2]).write_text(json.dumps({"cores": held.cores, "gpus": held.gpus, "env": held.gpu_env,
                                             "t0": time.time()}))
    time.sleep(1.5)
"""


def test_concurrent_holders_get_different_cores_and_gpus(tmp_path: Path):
    NodeLayout(cores=[[4, 36], [7, 39]], gpus=["0", "1"], gpu_env="ROCR_VISIBLE_DEVICES",
               gpu_cores=[[1], [0]]).save(tmp_path / "slots")
    procs = [subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path / "slots"), str(tmp_path / f"{i}.json"), "1"])
             for i in range(2)]
    assert all(p.wait(timeout=60) == 0 for p in procs)
    import json

    got = [json.loads((tmp_path / f"{i}.json").read_text()) for i in range(2)]
    assert abs(got[0]["t0"] - got[1]["t0"]) < 1.4, "the two holders did not run side by side"
    assert sorted(map(tuple, (g["cores"][0] for g in got))) == [(4, 36), (7, 39)]
    assert sorted(g["gpus"][0] for g in got) == ["0", "1"] and {g["env"] for g in got} == {"ROCR_VISIBLE_DEVICES"}
    # each GPU's nearest core went with it (gpu 0 -> core index 1 = CPUs 7,39)
    assert all((g["gpus"] == ["0"]) == (g["cores"] == [[7, 39]]) for g in got)


def _span(path: str, i: int, host: str, cpus: set[int], start: float, end: float) -> Span:
    return Span((path, i), f"{path} {i}", host, frozenset(cpus), start, end)


def test_runs_overlapping_on_a_shared_cpu_are_contended_and_no_others():
    t = time.time()
    a = _span("/a", 0, "n1", {0}, t, t + 2)
    b = _span("/b", 3, "n1", {0, 1}, t + 1, t + 1.5)  # shares CPU 0 with a while both run
    c = _span("/c", 0, "n1", {1}, t + 3, t + 4)  # CPU 1, but after b ended
    d = _span("/d", 0, "n2", {0}, t, t + 2)  # another host
    e = _span("/e", 0, "n1", {2}, t, t + 2)  # another CPU
    got = contended([a, b, c, d, e])
    assert set(got) == {("/a", 0), ("/b", 3)} and "CPU 0" in got[("/a", 0)] and "0.50 s" in got[("/b", 3)]


def test_spans_of_a_record_read_what_the_wrapper_saw_else_what_was_given():
    rec = {"hostname": "n1", "build": {"started_at": 10.0, "wall_s": 2.0, "cpus": "1"},
           "runs": [{"case": "c", "ranks": 2, "kind": "timing", "repeat": 0, "started_at": 12.0, "wall_s": 1.0,
                     "affinity": [{"host": "n1", "cpus": "0", "changed_to": "0-1"}, {"host": "n1", "cpus": "1"}],
                     "placement": {"cpus": "0-1"}},
                    {"case": "c", "ranks": 1, "kind": "timing", "repeat": 1, "started_at": 13.0, "wall_s": 1.0,
                     "affinity": [], "placement": {"cpus": "3"}},
                    {"case": "c", "ranks": 1, "kind": "timing", "repeat": 2, "started_at": 14.0, "wall_s": 1.0}]}
    spans = spans_of("/s", "agent/p/1", rec)
    assert [(s.key[1], sorted(s.cpus)) for s in spans] == [(-1, [1]), (0, [0, 1]), (1, [3])]
