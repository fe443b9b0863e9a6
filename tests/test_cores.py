"""Cores as a site fact (jobs/cores.py, hpcbench/site.py): the node layout runs are given cores
and GPUs of, declared per partition or found on this machine."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hpcbench.errors import ConfigError
from hpcbench.jobs.cores import NodeLayout, cpu_list, declared, parse_cpu_list, this_machine
from hpcbench.site import load_site


def test_cpu_lists_round_trip_the_kernels_format():
    assert parse_cpu_list("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert cpu_list([11, 0, 1, 2, 3, 8, 10]) == "0-3,8,10-11"
    assert cpu_list([5]) == "5" and parse_cpu_list("") == []
    with pytest.raises(ValueError):
        parse_cpu_list("0-x")


def test_declared_node_numbers_hardware_threads_as_linux_does_on_x86():
    # 4 cores, 2 threads each: core k holds CPUs k and k+4; core 0 reserved for the system
    lay = declared(4, threads_per_core=2, reserved=[0], gpus=["0", "1"], gpu_env="CUDA_VISIBLE_DEVICES",
                   gpu_cores=[[0, 1], [2, 3]])
    assert lay.cores == [[1, 5], [2, 6], [3, 7]]
    assert lay.cpus([0, 2]) == [1, 3, 5, 7]
    # GPU 0's nearest cores were 0 (reserved) and 1 -> index 0 of the usable cores
    assert lay.gpu_cores == [[0], [1, 2]]


def test_this_machine_groups_hardware_threads_of_a_core(tmp_path: Path, monkeypatch):
    sysfs = tmp_path / "cpu"
    for cpu, sib in {0: "0,2", 1: "1,3", 2: "0,2", 3: "1,3"}.items():
        (sysfs / f"cpu{cpu}" / "topology").mkdir(parents=True)
        (sysfs / f"cpu{cpu}" / "topology" / "thread_siblings_list").write_text(sib + "\n")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    assert this_machine(sysfs=sysfs).cores == [[0, 2], [1, 3]]
    assert this_machine(reserved=[0], sysfs=sysfs).cores == [[1, 3]]
    # a cpuset that allows one thread of core 1 only: that thread is all the core offers
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 2, 3})
    assert this_machine(sysfs=sysfs).cores == [[0, 2], [3]]
    assert this_machine(limit=1, sysfs=sysfs).cores == [[0, 2]]


def test_layout_saved_beside_the_slots_and_a_default_without_one(tmp_path: Path):
    lay = NodeLayout(cores=[[3], [5]], gpus=["1"], gpu_env="ROCR_VISIBLE_DEVICES")
    lay.save(tmp_path)
    assert NodeLayout.load(tmp_path, 7) == lay
    assert NodeLayout.load(tmp_path / "none", 2).cores == [[0], [1]]


def test_site_files_declare_cores_and_gpus(tmp_path: Path):
    polaris = load_site("polaris")
    lay = polaris.node_layout("cuda")
    assert len(lay.cores) == 32 and len(lay.gpus) == 4
    local = load_site("local")
    assert local.node_layout("cpu").cores == this_machine().cores
    # cores_per_node counts the usable cores, the reserved ones are added back: with 32 usable and
    # one reserved the node has 33 cores (0-32), so core 32 can be reserved and core 33 cannot.
    text = (Path(__file__).parent.parent / "site-configs" / "polaris.yaml").read_text()
    ok, bad = tmp_path / "ok.yaml", tmp_path / "bad.yaml"
    for path, core in ((ok, 32), (bad, 33)):
        extra = f"    cores_per_node: 32\n    reserved_cores: [{core}]\n"
        path.write_text(text.replace("    cores_per_node: 32\n", extra, 1))
    reserved = load_site(str(ok)).partitions[1].layout()
    assert len(reserved.cores) == 32 and not any(32 in c for c in reserved.cores)  # core 32: cpus 32 and 65
    with pytest.raises(ConfigError, match="reserved_cores: core indices must be below the node's 33 cores"):
        load_site(str(bad))
