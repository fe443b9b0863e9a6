"""Packed placement across nodes on a REAL two-node Slurm cluster: two slurmd daemons on this
one machine (scripts/slurm-test-cluster.sh with HPCBENCH_SLURM_NODES=2: node1 and node2, one
core each, their own ports, spool and accounting), so that `srun --exact --nodelist` subsets
and steps spanning nodes are Slurm's own doing, checked against sacct, not a dry run. Both
nodes are this machine: what this cannot show is placement across real network links."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.clusters import running_cluster, site_variant
from tests.conftest import hpcbench

pytestmark = [pytest.mark.slurm, pytest.mark.petsc]

# Two CPUs a node (both nodes share this machine's two cores; Slurm does not know): a rank
# count one node holds can be asked to span both, as a sweep's --nodes does.
TWO_NODES = {"HPCBENCH_SLURM_DIR": "/tmp/hpcbench-slurm-2n", "HPCBENCH_SLURM_PORT_BASE": "17917",
             "HPCBENCH_SLURM_CLUSTER": "hpcbench2n", "HPCBENCH_SLURM_NODES": "2", "HPCBENCH_SLURM_CPUS_PER_NODE": "2"}


@pytest.fixture(scope="module")
def two_node_cluster():
    with running_cluster(TWO_NODES) as conf:
        cpus = subprocess.run(["sinfo", "-h", "-N", "-o", "%c"], capture_output=True, text=True, check=True,
                              env={**os.environ, "SLURM_CONF": conf}).stdout.split()
        if set(cpus) != {"2"}:
            pytest.fail(f"the two-node test cluster ({TWO_NODES['HPCBENCH_SLURM_DIR']}) has {cpus} CPUs a node, "
                        "not 2: it was started by an older scripts/slurm-test-cluster.sh; stop it and run again")
        yield conf


def _steps(alloc: str, conf: str) -> dict[str, str]:
    """Step id -> its NodeList, from sacct of the allocation; the builds (steps of their own,
    named hpcbench-build, on the job's first node) left out."""
    rows = subprocess.run(["sacct", "-n", "-P", "-j", alloc, "-o", "JobID,NodeList,JobName"], capture_output=True,
                          text=True, check=True, env={**os.environ, "SLURM_CONF": conf}).stdout.splitlines()
    return {r.split("|")[0]: r.split("|")[1] for r in rows if r and r.split("|")[2] != "hpcbench-build"}


def test_packed_campaign_places_runs_on_node_subsets_and_spans_both_nodes(two_node_cluster, tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_CONF", two_node_cluster)
    site = site_variant(tmp_path, "ci-slurm-2n", **{
        "  - name: debug\n    max_walltime_min: 60": "  - name: debug\n    max_walltime_min: 60\n"
                                                    "    cores_per_node: 1\n    max_nodes: 2",
        "timing_repeats: 3": "timing_repeats: 1", "valgrind: true": "valgrind: false"})
    out = tmp_path / "c"
    hpcbench("submit", "--site", str(site), "--pack", "--wait", "--agent", "reference", "--profile", "quick",
             "--problems", "advection1d,robertson,rosenbrock", "--out", str(out))
    ledger = json.loads((out / "scheduler" / "ledger.json").read_text())
    assert ledger["submit_calls"] == 1
    alloc = {e["sched_id"] for e in ledger["jobs"].values()}.pop()
    steps = _steps(alloc, two_node_cluster)
    assert steps[alloc] == "node[1-2]"  # one allocation of both nodes
    summary = json.loads(next((out / "scheduler" / "pack").glob("*.summary.json")).read_text())
    assert summary["hosts"] == ["node1", "node2"] and summary["cores_per_node"] == 1

    recs = {p.stem.split("__")[1]: json.loads(p.read_text()) for p in (out / "records").glob("*.json")}
    assert set(recs) == {"advection1d", "robertson", "rosenbrock"}
    assert all(r["status"] == "done" for r in recs.values()), {k: r.get("reason") for k, r in recs.items()}
    # Every run is a step of the allocation, on the nodes its record names: what Slurm says.
    step_nodes = sorted((k, v) for k, v in steps.items() if "." in k and k.rsplit(".", 1)[-1].isdigit())
    runs = [r for rec in recs.values() for r in rec["runs"]]
    assert len(step_nodes) == len(runs)
    assert all(r["exit_code"] == 0 and r["placement"]["packed"] for r in runs)
    expand = {"node[1-2]": ["node1", "node2"], "node1": ["node1"], "node2": ["node2"]}
    assert sorted(map(tuple, (expand[v] for _, v in step_nodes))) == sorted(tuple(r["placement"]["nodes"])
                                                                           for r in runs)
    # advection1d's two-rank runs span both nodes (one rank each); its one-rank runs the first
    wide = [r for r in recs["advection1d"]["runs"] if r["ranks"] == 2]
    assert wide and all(r["placement"]["nodes"] == ["node1", "node2"] and r["placement"]["ranks_per_node"] == 1
                        and "--nodelist=node1,node2" in " ".join(r["command"]) for r in wide)
    # the two one-rank jobs side by side, one per node
    narrow_nodes = {name: {tuple(r["placement"]["nodes"]) for r in recs[name]["runs"]}
                    for name in ("robertson", "rosenbrock")}
    assert sorted(narrow_nodes.values(), key=str) == [{("node1",)}, {("node2",)}], narrow_nodes


def test_sweep_points_run_on_the_node_count_they_are_labelled_with(two_node_cluster, tmp_path, monkeypatch):
    """`sweep --nodes 1,2` at 2 ranks, on nodes of 2 cores: one node holds both ranks, yet the
    point labelled 2 nodes runs one rank on each (its steps span node[1-2] in sacct), and the
    allocation has both nodes; the 1-node point runs on one."""
    monkeypatch.setenv("SLURM_CONF", two_node_cluster)
    site = site_variant(tmp_path, "ci-slurm-2x2", **{
        "  - name: debug\n    max_walltime_min: 60": "  - name: debug\n    max_walltime_min: 60\n"
                                                    "    cores_per_node: 2\n    max_nodes: 2"})
    out = tmp_path / "s"
    hpcbench("sweep", "--site", str(site), "--agent", "reference", "--problems", "advection1d", "--ranks", "2",
             "--nodes", "1,2", "--sizes", "400000", "--repeats", "1", "--out", str(out))
    ledger = json.loads((out / "scheduler" / "ledger.json").read_text())
    alloc = {e["sched_id"] for e in ledger["jobs"].values()}.pop()
    steps = _steps(alloc, two_node_cluster)
    assert steps[alloc] == "node[1-2]"  # the allocation holds the widest point's nodes
    rec = json.loads(next((out / "records").glob("*.json")).read_text())
    runs = [r for r in rec["runs"] if r["kind"] in ("instrumented", "timing")]
    assert {r["case"] for r in runs} == {"n400000", "n400000-nodes2"}
    for r in runs:
        two = r["case"].endswith("-nodes2")
        assert r["exit_code"] == 0 and r["placement"]["nodes"] == (["node1", "node2"] if two else ["node1"]), r
        assert r["placement"]["ranks_per_node"] == (1 if two else 2)
        assert len(r["affinity"]) == 2  # both ranks seen (both "nodes" are this machine: one hostname)
    spans = sorted(v for k, v in steps.items() if "." in k and k.rsplit(".", 1)[-1].isdigit())
    assert spans.count("node[1-2]") >= 2  # the 2-node point's instrumented and timed runs
