"""What the scheduler charged, collected into the store and reported per campaign and agent:
sacct on the REAL Slurm test cluster, `qstat -xf -F json` through the PBS stand-in
(tests/fake_pbs: PBS Pro cannot be installed here), and the parsers on both formats."""

from __future__ import annotations

import json
import subprocess

import pytest

from hpcbench.executors.accounting import Usage, parse_qstat_usage, parse_sacct_usage, size_bytes, split_node_hours
from hpcbench.jobs.records import CaseRun, JobSpec, Variant
from hpcbench.store.accounting import read_accounting
from tests.clusters import polaris_here, serve
from tests.conftest import QUICK, hpcbench


def test_sacct_lines_give_elapsed_nodes_and_the_largest_steps_memory():
    text = ("41|COMPLETED|95|2|||2026-12-05T00:01:00|2026-12-05T00:02:35\n"
            "41.batch|COMPLETED|95|1|2048K||\n41.0|COMPLETED|30|2|1.5G||\n41.1|COMPLETED|20|1|300M||\n"
            "42_3|TIMEOUT|3600|1|||\n")
    got = parse_sacct_usage(text)
    assert got["41"].nodes == 2 and got["41"].elapsed_s == 95 and got["41"].max_rss_bytes == 1.5 * 2**30
    assert got["41"].node_hours == pytest.approx(2 * 95 / 3600)
    assert got["42_3"].state == "TIMEOUT" and got["42_3"].node_hours == 1.0
    assert size_bytes("123456kb") == 123456 * 1024 and size_bytes("") == 0


def test_qstat_json_gives_walltime_memory_and_nodes():
    text = json.dumps({"Jobs": {"7.pbs": {"job_state": "F", "Resource_List": {"select": "4:system=polaris"},
                                          "resources_used": {"walltime": "01:30:00", "mem": "2048kb"}}}})
    u = parse_qstat_usage(text)["7.pbs"]
    assert (u.nodes, u.elapsed_s, u.max_rss_bytes, u.node_hours) == (4, 5400, 2 * 2**20, 6.0)


def test_an_allocations_node_hours_are_shared_by_wall_time_and_cores(tmp_path):
    def job(jid: str, wall: float, cores: int) -> JobSpec:
        rec = tmp_path / f"{jid}.json"
        rec.write_text(json.dumps({"wall_s": wall}))
        return JobSpec(job_id=jid, agent="a", problem="p", attempt="1", source_dir=".", entry="m.c", files=["m.c"],
                       runs=[CaseRun(case="c", args=[], ranks=cores, time_limit_s=1)],
                       variant=Variant(petsc_dir="/x"), work_dir=".", record_path=str(rec), cores=cores)
    got = split_node_hours({"9": Usage("9", "COMPLETED", nodes=1, elapsed_s=3600)},
                {"9": [job("a__p__1", 10, 1), job("b__p__1", 10, 3)], "10": [job("c__p__1", 1, 1)]})
    assert len(got) == 1 and got[0].jobs == pytest.approx({"a__p__1": 0.25, "b__p__1": 0.75})  # 10 unknown: left out


@pytest.mark.slurm
@pytest.mark.petsc
def test_report_shows_node_hours_from_sacct_on_the_slurm_cluster(slurm_cluster, tmp_path):
    out = tmp_path / "c"
    hpcbench("submit", "--site", "ci-slurm", "--profile", str(QUICK), "--pack", "--wait", "--agent", "reference",
             "--problems", "rosenbrock,vec-scatter", "--out", str(out))
    said = hpcbench("collect", str(out)).stdout
    assert "scheduler accounting of 1 allocation(s)" in said, said
    alloc = json.loads((out / "scheduler" / "ledger.json").read_text())["arrays"][0]["array_id"]
    # What sacct itself says of the allocation: the store holds exactly that.
    line = subprocess.run(["sacct", "-n", "-P", "-X", "-o", "ElapsedRaw,NNodes", "-j", alloc], capture_output=True,
                          text=True, check=True).stdout.split()[0]
    elapsed, nodes = (int(x) for x in line.split("|"))
    acct = read_accounting(out / "campaign.h5")
    assert acct is not None and [a["sched_id"] for a in acct["allocations"]] == [alloc]
    a = acct["allocations"][0]
    assert (a["elapsed_s"], a["nodes"], a["source"]) == (elapsed, nodes, "sacct") and elapsed > 0
    assert a["node_hours"] == pytest.approx(nodes * elapsed / 3600)
    assert {j["job_id"] for j in acct["jobs"]} == {"reference__rosenbrock__1", "reference__vec-scatter__1"}
    assert sum(j["node_hours"] for j in acct["jobs"]) == pytest.approx(a["node_hours"])
    hpcbench("score", str(out))
    md = hpcbench("report", str(out), "--format", "md").stdout
    assert "## Scheduler accounting" in md and f"{a['node_hours']:.4f} node-hours in 1 allocation(s)" in md, md[-1500:]
    assert f"| `reference` | {a['node_hours']:.4f} | 100% |" in md


@pytest.mark.petsc
def test_qstat_accounting_through_the_pbs_standin_reaches_the_store(fake_pbs, tmp_path, monkeypatch):
    out = tmp_path / "c"
    site = polaris_here(tmp_path)
    site.write_text(site.read_text().replace('template: "mpiexec -n {ranks}"',
                                             'template: "mpiexec --np {ranks} --npernode {ppn}"'))
    hpcbench("submit", "--site", str(site), "--account", "P", "--problems", "rosenbrock", "--out", str(out))
    alloc = json.loads((out / "scheduler" / "ledger.json").read_text())["arrays"][0]["array_id"]
    nodefile = tmp_path / "nodefile"
    nodefile.write_text(f"{subprocess.run(['hostname'], capture_output=True, text=True).stdout.strip()}\n")
    monkeypatch.setenv("PBS_NODEFILE", str(nodefile))
    serve(fake_pbs, alloc)
    assert "done: 1" in hpcbench("wait", str(out), "--poll", "0.1", "--timeout", "60").stdout
    hpcbench("collect", str(out))
    state = json.loads((fake_pbs / "state.json").read_text())["jobs"][alloc]
    acct = read_accounting(out / "campaign.h5")
    assert acct is not None
    a = acct["allocations"][0]
    used = state["resources_used"]
    h, m, s = (int(x) for x in used["walltime"].split(":"))
    assert (a["sched_id"], a["source"], a["nodes"], a["elapsed_s"]) == (alloc, "qstat -xf", 1, h * 3600 + m * 60 + s)
    assert a["max_rss_bytes"] == int(used["mem"].removesuffix("kb")) * 1024 > 0
    assert [j["agent"] for j in acct["jobs"]] == ["reference"]
    calls = [c for c in (fake_pbs / "calls.log").read_text().splitlines() if '"qstat"' in c]
    assert any('"-xf"' in c and alloc in c for c in calls)
