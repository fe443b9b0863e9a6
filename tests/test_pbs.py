"""PBS Pro backend against a STAND-IN for PBS (tests/fake_pbs/pbs_standin.py): PBS Pro cannot
be installed on these machines. The stand-in answers qsub, `qstat -xf -F json` and qdel in
PBS Pro's documented formats; the test plays the server, running each subjob's generated
#PBS script for real on this machine (real PETSc, real MPI, the job's own SIGTERM handler)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from hpcbench.executors.pbs import parse_qstat_json, parse_qsub, state_of, subjob_ids
from tests.clusters import pbs_calls, pbs_state, polaris_here, serve
from tests.conftest import hpcbench


def test_qstat_json_and_ids_in_pbs_pro_formats():
    assert parse_qsub("1234.polaris-pbs-01.hsn.cm.polaris.alcf.anl.gov\n") == \
        "1234.polaris-pbs-01.hsn.cm.polaris.alcf.anl.gov"
    assert parse_qsub("1234[].server\n") == "1234[].server"
    assert subjob_ids("1234[].server", 3) == ["1234[0].server", "1234[1].server", "1234[2].server"]
    assert subjob_ids("1234.server", 1) == ["1234.server"]
    text = json.dumps({"timestamp": 1, "pbs_version": "2022.1.1", "pbs_server": "s", "Jobs": {
        "1[0].s": {"job_state": "X", "Exit_status": 0}, "1[1].s": {"job_state": "X", "Exit_status": -29},
        "1[2].s": {"job_state": "R"}, "2.s": {"job_state": "F", "Exit_status": 271},
        "3.s": {"job_state": "F", "comment": "Job deleted by user"}, "4.s": {"job_state": "F", "Exit_status": -3},
        "5.s": {"job_state": "F", "Exit_status": -27}, "6.s": {"job_state": "F", "Exit_status": 1}}})
    got = {k: v.state for k, v in parse_qstat_json(text).items()}
    assert got == {"1[0].s": "COMPLETED", "1[1].s": "TIMEOUT", "1[2].s": "RUNNING", "2.s": "CANCELLED",
                   "3.s": "CANCELLED", "4.s": "BOOT_FAIL", "5.s": "OUT_OF_MEMORY", "6.s": "FAILED"}
    assert state_of({"job_state": "Q"}).state == "PENDING"
    assert parse_qstat_json("") == {} and parse_qstat_json("not json") == {}


def test_missing_account_is_refused_before_qsub(fake_pbs, tmp_path):
    p = hpcbench("submit", "--site", str(polaris_here(tmp_path)), "--problems", "rosenbrock", "--out",
                 str(tmp_path / "c"), check=False)
    assert p.returncode != 0 and "--account" in p.stderr and "HPCBENCH_ACCOUNT" in p.stderr
    assert not [c for c in pbs_calls(fake_pbs) if c[0] == "qsub"]


def test_polaris_campaign_array_timeout_unknown_id_and_qdel(fake_pbs, tmp_path):
    out = tmp_path / "c"
    site = polaris_here(tmp_path)
    hpcbench("submit", "--site", str(site), "--no-pack", "--account", "MyProj", "--problems", "rosenbrock,robertson",
             "--out", str(out))
    ledger = json.loads((out / "scheduler" / "ledger.json").read_text())
    assert ledger["submit_calls"] == 1  # both single-rank jobs: one shape, one array
    array_id = ledger["arrays"][0]["array_id"]
    assert array_id == "1001[].pbs-test"
    script = Path(ledger["arrays"][0]["script"]).read_text()
    for line in (f"#PBS -l select=1:ncpus={os.cpu_count()}:system=polaris", "#PBS -l filesystems=home:eagle",
                 "#PBS -q debug", "#PBS -A MyProj", "#PBS -J 0-1", "#PBS -l walltime=00:"):
        assert line in script, line
    ids = {jid: e["sched_id"] for jid, e in ledger["jobs"].items()}
    assert sorted(ids.values()) == ["1001[0].pbs-test", "1001[1].pbs-test"]
    assert "pending" in hpcbench("status", str(out)).stdout

    serve(fake_pbs, ids["reference__rosenbrock__1"])
    serve(fake_pbs, ids["reference__robertson__1"], sigterm_after=0.5, walltime_kill=True,
          sigterm_when=out / "work" / "reference__robertson__1" / "build" / "app")
    polls_before = sum(1 for c in pbs_calls(fake_pbs) if c[0] == "qstat")
    waited = hpcbench("wait", str(out), "--poll", "0.1", "--timeout", "60").stdout
    assert "done: 1" in waited and "timeout: 1" in waited, waited
    qstats = [c for c in pbs_calls(fake_pbs) if c[0] == "qstat"][polls_before:]
    assert qstats and qstats[0][1:5] == ["-xf", "-F", "json", "-t"] and array_id in qstats[0]
    rec = json.loads((out / "records" / "reference__robertson__1.json").read_text())
    assert rec["status"] == "timeout" and rec["scheduler"] == "pbs"
    assert rec["build"] is not None  # what the job finished before SIGTERM is kept
    done = json.loads((out / "records" / "reference__rosenbrock__1.json").read_text())
    assert done["status"] == "done" and done["scheduler_job_id"] == ids["reference__rosenbrock__1"]
    assert all(r["exit_code"] == 0 for r in done["runs"])

    # A second campaign: one job, qdel'd while it runs; its id later purged (qstat exit 153).
    out2 = tmp_path / "c2"
    hpcbench("submit", "--site", str(site), "--no-pack", "--account", "MyProj", "--problems", "rosenbrock",
             "--out", str(out2))
    jid2 = json.loads((out2 / "scheduler" / "ledger.json").read_text())["jobs"]["reference__rosenbrock__1"]
    assert jid2["sched_id"] == "1002.pbs-test"  # a single job: no -J, a plain id
    s = pbs_state(fake_pbs)
    s["jobs"]["1002.pbs-test"]["job_state"] = "R"
    (fake_pbs / "state.json").write_text(json.dumps(s))
    assert "cancelled 1 job" in hpcbench("cancel", str(out2)).stdout
    assert ["qdel", "1002.pbs-test"] in pbs_calls(fake_pbs)
    serve(fake_pbs, "1002.pbs-test", sigterm_after=1.5)  # the job catches qdel's SIGTERM and exits 0
    assert "cancelled: 1" in hpcbench("wait", str(out2), "--poll", "0.1", "--timeout", "60").stdout
    assert not (out2 / "records" / "reference__rosenbrock__1.json").exists()
    assert json.loads((out2 / "work" / "reference__rosenbrock__1" / "cancelled.json").read_text())[
        "status"] == "cancelled"
    # Purged from the server's history: qstat answers 153 for it and the others are still read.
    s = pbs_state(fake_pbs)
    del s["jobs"]["1002.pbs-test"]
    (fake_pbs / "state.json").write_text(json.dumps(s))
    from hpcbench.executors.pbs import PbsBackend
    from hpcbench.site import load_site

    timed_out = ids["reference__robertson__1"]
    got = PbsBackend(load_site(str(site)), tmp_path, tmp_path).poll(["1002.pbs-test", timed_out])
    assert set(got) == {timed_out} and got[timed_out].state == "TIMEOUT"
    p = subprocess.run(["qstat", "-xf", "-F", "json", "1002.pbs-test"], capture_output=True, text=True)
    assert p.returncode == 153 and "Unknown Job Id" in p.stderr
