"""The PBS stand-in (tests/fake_pbs: PBS Pro cannot be installed here) refuses what OpenPBS's
qsub and server refuse that a script could contain, and takes every script hpcbench renders for
Polaris and Aurora under those sites' own queue limits."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from hpcbench.site import SiteConfig, load_site
from tests.test_sites_conformance import ROOT, Rendered, job_spec, no_user_limits, render, render_site, site_copy

STANDIN = ROOT / "tests" / "fake_pbs" / "pbs_standin.py"


def queues_of(site: SiteConfig) -> str:
    """The site's queues in the stand-in's FAKE_PBS_QUEUES form."""
    return ",".join(f"{p.queue}:{p.min_nodes}-{p.max_nodes}:{p.max_walltime_min}:{p.user_job_limit}"
                    for p in site.partitions)


def qsub(tmp: Path, script: str, queues: str, state: Path | None = None) -> subprocess.CompletedProcess:
    bindir = tmp / "bin"
    if not bindir.is_dir():
        bindir.mkdir()
        (bindir / "qsub").symlink_to(STANDIN)
    state = state or tmp / "pbs"
    state.mkdir(exist_ok=True)
    path = tmp / f"job{len(list(tmp.glob('job*.sh')))}.sh"
    path.write_text(script)
    env = {**os.environ, "FAKE_PBS_DIR": str(state), "FAKE_PBS_QUEUES": queues}
    return subprocess.run([str(bindir / "qsub"), str(path)], capture_output=True, text=True, env=env, timeout=60)


def _array_script(tmp: Path, n: int = 2, parallelism: int | None = None) -> str:
    """Polaris's array script for `n` one-node jobs (debug's per-user limit lifted so it renders)."""
    def edit(raw: dict) -> None:
        no_user_limits(raw)
        if parallelism is not None:
            raw["batch"]["array_parallelism"] = parallelism

    site = site_copy("polaris", tmp, edit)
    r = Rendered(site)
    jobs = [job_spec(site, tmp, f"j{i}", "cpu", [1]) for i in range(n)]
    render(site, tmp, "array", jobs, False, None, r)
    return next(s.text for s in r.scripts if f"#PBS -J 0-{n - 1}" in s.text)


def test_an_array_runs_no_more_subjobs_at_once_than_the_sites_array_parallelism(tmp_path):
    """OpenPBS takes `-J 0-3%2` (src/cmds/qsub.c: the part after % is max_run_subjobs)."""
    text = _array_script(tmp_path, 4, parallelism=2)
    assert "#PBS -J 0-3%2" in text
    state = tmp_path / "pbs"
    assert qsub(tmp_path, text, "debug", state=state).returncode == 0
    jobs = json.loads((state / "state.json").read_text())["jobs"]
    arr = next(j for k, j in jobs.items() if k.endswith("[].pbs-test"))
    assert arr["max_run_subjobs"] == 2 and sum("array_index" in j for j in jobs.values()) == 4
    assert "%" not in _array_script(tmp_path, 4, parallelism=64)  # no cap below the array's size


def test_the_old_non_rerunnable_array_is_refused_and_the_new_one_taken(tmp_path):
    new = _array_script(tmp_path)
    assert "#PBS -r y" in new and "#PBS -r n" not in new
    old = new.replace("#PBS -r y", "#PBS -r n")  # as main at cf18e6d wrote it
    p = qsub(tmp_path, old, "debug")
    assert p.returncode == 2 and "cannot submit non-rerunable Array Job" in p.stderr
    p = qsub(tmp_path, new, "debug")
    assert p.returncode == 0 and p.stdout.strip().endswith("[].pbs-test"), p.stderr


BASE = "#!/bin/bash\n#PBS -l select=1:system=polaris\n#PBS -l walltime=00:30:00\n#PBS -q debug\n#PBS -r n\ntrue\n"


@pytest.mark.parametrize("edit,message", [
    (lambda t: t.replace("select=1:system=polaris", "select=0"), "illegal -l value"),
    (lambda t: t.replace("select=1:system=polaris", "select=two"), "illegal -l value"),
    (lambda t: t.replace("walltime=00:30:00", "walltime=half-an-hour"), "illegal -l value"),
    (lambda t: t.replace("#PBS -r n", "#PBS -r maybe"), "illegal -r value"),
    (lambda t: t.replace("-q debug", "-q nosuchqueue"), "Unknown queue nosuchqueue"),
    (lambda t: t.replace("select=1:", "select=3:"), "violates queue and/or server resource limits"),
    (lambda t: t.replace("walltime=00:30:00", "walltime=03:58:00"), "violates queue and/or server resource limits"),
])
def test_what_openpbs_refuses_is_refused(tmp_path, edit, message):
    assert qsub(tmp_path, BASE, "debug:1-2:60:1").returncode == 0
    p = qsub(tmp_path, edit(BASE), "debug:1-2:60:0", state=tmp_path / "fresh")
    assert p.returncode != 0 and message in p.stderr, (p.returncode, p.stderr)


def test_a_second_job_beyond_the_per_user_limit_is_refused(tmp_path):
    assert qsub(tmp_path, BASE, "debug:1-2:60:1").returncode == 0
    p = qsub(tmp_path, BASE, "debug:1-2:60:1")
    assert p.returncode != 0 and "would exceed queue debug's per-user limit" in p.stderr
    state = json.loads((tmp_path / "pbs" / "state.json").read_text())
    for job in state["jobs"].values():
        job["job_state"] = "F"  # the first one finished
    (tmp_path / "pbs" / "state.json").write_text(json.dumps(state))
    assert qsub(tmp_path, BASE, "debug:1-2:60:1").returncode == 0


@pytest.mark.parametrize("site", ["polaris", "aurora"])
def test_every_rendered_script_is_taken_under_the_sites_own_queue_limits(site, tmp_path):
    s = load_site(site)
    r = render_site(site, tmp_path, s)
    assert r.scripts
    for i, script in enumerate(r.scripts):  # each scenario as the user's only jobs
        p = qsub(tmp_path, script.text, queues_of(s), state=tmp_path / f"state{i}")
        assert p.returncode == 0, (script.label, p.stderr, script.text[:400])


@pytest.mark.parametrize("select,ncpus,lines", [("1:system=polaris", "1", 1), ("2:ncpus=64", "64", 2),
                                                ("1:ncpus=8:mpiprocs=4+2:ncpus=2", "8", 6)])
def test_the_standin_gives_a_job_ncpus_and_a_node_file_as_openpbs_mom_does(select, ncpus, lines, tmp_path,
                                                                          monkeypatch):
    """NCPUS is the first chunk's ncpus, 1 where none is asked (ALCF's selects): a test that set
    NCPUS by hand to the node's cores hid that every Polaris allocation saw one core."""
    from tests.clusters import mom_env

    monkeypatch.delenv("PBS_NODEFILE", raising=False)
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/bash\n#PBS -l select={select}\n#PBS -l walltime=00:10:00\ntrue\n")
    env = mom_env(script, tmp_path, "7.pbs")
    assert env["NCPUS"] == ncpus and len(Path(env["PBS_NODEFILE"]).read_text().splitlines()) == lines
