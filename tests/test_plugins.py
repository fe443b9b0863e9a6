"""Extending hpcbench from outside the tree: a tiny package with an evaluator, an executor
(scheduler) and an agent kind, declared as entry points, is installed into a temporary
folder (`pip install --target`, put on PYTHONPATH: our venv is not touched), and a real
`hpcbench run` (real PETSc, real MPI) uses all three: the site file names the plugin's
scheduler, `--agent demo:...` is dispatched to the plugin's factory, and the scoring holds
the plugin evaluator's score. Nothing here is a stand-in: the plugin is a real package."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from hpcbench.resources import data_path
from hpcbench.store.scorings import read_scoring
from tests.conftest import QUICK

pytestmark = pytest.mark.petsc

HPCBENCH = str(Path(sys.executable).parent / "hpcbench")

PYPROJECT = """\
[build-system]
requires = ["setuptools>=69"]
build-backend = "setuptools.build_meta"

[project]
name = "hpcbench-demo-plugin"
version = "0.1.0"

[tool.setuptools]
py-modules = ["hpcbench_demo"]

[project.entry-points."hpcbench.evaluators"]
demo_comment_lines = "hpcbench_demo:CommentLines"

[project.entry-points."hpcbench.executors"]
demo = "hpcbench_demo:DemoExecutor"

[project.entry-points."hpcbench.schedulers"]
demo = "hpcbench_demo:DemoView"

[project.entry-points."hpcbench.agents"]
demo = "hpcbench_demo:demo_agent"
"""

MODULE = '''\
"""A third-party hpcbench plugin: one evaluator, one scheduler, one agent kind."""
import json
from pathlib import Path

from hpcbench.agents.base import Conversation, GeneratingAgent
from hpcbench.agents.contract import Answer, Reply
from hpcbench.evaluators.base import Evaluator
from hpcbench.executors.local import LocalExecutor
from hpcbench.schedulers.local import LocalView


class CommentLines(Evaluator):
    """Share of C source lines that hold a comment."""

    name = "demo_comment_lines"
    stage = "quality"
    category = "code"

    def evaluate(self, ctx):
        lines = [ln for src in ctx.c_sources().values() for ln in src.splitlines() if ln.strip()]
        if not lines:
            return self.unscored("no C source")
        n = sum(("//" in ln or "/*" in ln or ln.lstrip().startswith("*")) for ln in lines)
        return self.result(n / len(lines), f"{n} of {len(lines)} lines hold a comment")


class DemoExecutor(LocalExecutor):
    """Runs jobs on this machine, and leaves a note of every job it was handed."""

    scheduler = "demo"

    def submit(self, jobs, progress=None):
        note = Path(self.campaign.root) / "demo-executor.json"
        seen = json.loads(note.read_text()) if note.is_file() else []
        note.write_text(json.dumps(seen + [j.job_id for j in jobs]))
        super().submit(jobs, progress)


class DemoView(LocalView):
    """Its jobs run on this machine: the allocation is this machine."""


class _Copy(Conversation):
    def __init__(self, folder):
        self.folder = folder

    async def first(self):
        files = {p.name: p.read_text() for p in sorted(self.folder.glob("*.c"))}
        return Reply(Answer(files=files, entry="main.c"))


class DemoAgent(GeneratingAgent):
    """Answers every problem with the C files of one folder (the argument of demo:FOLDER)."""

    kind = "demo"

    def __init__(self, folder):
        self.folder, self.name, self.model = Path(folder), "demo-copier", "demo"

    def conversation(self, problem):
        return _Copy(self.folder)


def demo_agent(arg, request):
    if not arg:
        raise ValueError("write demo:FOLDER")
    return DemoAgent(arg)


demo_agent.usage = "demo:FOLDER"
'''


def _pip_install(tmp: Path, name: str, files: dict[str, str]) -> Path:
    """A package made of `files` in tmp/<name>-src, installed into tmp/<name>-pkgs (returned)."""
    src, target = tmp / f"{name}-src", tmp / f"{name}-pkgs"
    src.mkdir()
    for file, text in files.items():
        (src / file).write_text(text)
    # No network, no build isolation: setuptools comes from our venv; --target keeps it out of the venv.
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                    "--target", str(target), str(src)], check=True, capture_output=True, text=True, cwd=tmp)
    return target


def _install(tmp: Path) -> Path:
    return _pip_install(tmp, "demo", {"pyproject.toml": PYPROJECT, "hpcbench_demo.py": MODULE})


def _site_file(tmp: Path) -> Path:
    site = yaml.safe_load((data_path("site_configs") / "local.yaml").read_text())
    site.update(name="demo-site", scheduler="demo", valgrind=False, timing_repeats=1,
                storage_root=str(tmp / "campaigns"))
    path = tmp / "demo-site.yaml"
    path.write_text(yaml.safe_dump(site))
    return path


def _hpcbench(args: list[str], cwd: Path, plugin: Path | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if plugin is not None:
        env["PYTHONPATH"] = str(plugin)
    return subprocess.run([HPCBENCH, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=1200)


def test_an_installed_plugin_adds_an_evaluator_a_scheduler_and_an_agent_kind(tmp_path):
    plugin = _install(tmp_path)
    site = _site_file(tmp_path)
    ref = data_path("problems") / "rosenbrock" / "reference"
    out = tmp_path / "campaign"

    # Without the package the site file's scheduler is unknown: the error names file, field and known names.
    p = _hpcbench(["submit", "--dry-run", "--site", str(site), "--out", str(out)], tmp_path, None)
    assert p.returncode != 0
    assert str(site) in p.stderr and "scheduler" in p.stderr and "'demo' is not a known scheduler" in p.stderr
    assert "local, pbs, slurm" in p.stderr

    p = _hpcbench(["run", "--profile", str(QUICK), "--site", str(site), "--agent", f"demo:{ref}", "--problems",
                   "rosenbrock", "--out", str(out)], tmp_path, plugin)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]

    # The agent kind: dispatched to the plugin's factory, its answer written as agent demo-copier.
    meta = json.loads((out / "generated" / "demo-copier" / "rosenbrock" / "1" / "submission.json").read_text())
    assert meta["model"] == "demo" and meta["files"] == ["main.c"]
    # The scheduler: the plugin's executor was handed every planned job (the reference's and the agent's).
    handed = json.loads((out / "demo-executor.json").read_text())
    assert sorted(handed) == ["demo-copier__rosenbrock__1", "reference__rosenbrock__1"]
    # The evaluator: scored for both submissions, with the share a reader of main.c counts.
    text = [ln for ln in (ref / "main.c").read_text().splitlines() if ln.strip()]
    want = sum(("//" in ln or "/*" in ln or ln.lstrip().startswith("*")) for ln in text) / len(text)
    scoring = read_scoring(out)
    for agent in ("reference", "demo-copier"):
        row = scoring.row(agent, "rosenbrock", "1")
        assert row is not None and row["gates_passed"], row
        ev = row["evaluators"]["demo_comment_lines"]
        assert ev["status"] == "scored" and ev["category"] == "code"
        assert ev["score"] == pytest.approx(want)
    assert "demo-copier" in p.stdout  # on the leaderboard


def test_a_broken_plugin_is_named_in_the_error(tmp_path):
    pyproject = textwrap.dedent("""\
        [build-system]
        requires = ["setuptools>=69"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "hpcbench-broken-plugin"
        version = "0.1.0"
        [tool.setuptools]
        py-modules = ["hpcbench_broken"]
        [project.entry-points."hpcbench.executors"]
        broken = "hpcbench_broken:Nothing"
        [project.entry-points."hpcbench.schedulers"]
        broken = "hpcbench_broken:Nothing"
        """)
    target = _pip_install(tmp_path, "broken", {"pyproject.toml": pyproject,
                                               "hpcbench_broken.py": "raise RuntimeError('half-installed')\n"})
    site = tmp_path / "broken.yaml"
    site.write_text("name: broken\nscheduler: broken\npartitions: [{name: q}]\n")
    p = _hpcbench(["submit", "--dry-run", "--site", str(site), "--out", str(tmp_path / "c")], tmp_path, target)
    assert p.returncode != 0
    assert "hpcbench-broken-plugin" in p.stderr and "half-installed" in p.stderr


# ----------------------------------------------------------------------------- a scheduler and a launcher

# A STAND-IN batch scheduler, "toyq": LSF, Flux and the like do not run on this machine, so the plugin
# brings a scheduler of its own that runs each submitted script here, in the background, through its
# own commands (toyq_cmd: submit, stat, cancel; state in a spool folder), and gives the script an
# allocation in its own variables (TOYQ_JOB_ID, TOYQ_HOSTS, TOYQ_CPUS). Everything else is real: the
# plugin is a real installed package whose four parts (executor, allocation view with its own
# settings model, launcher) hpcbench finds through entry points, and the jobs build and run the
# bundled references with the real PETSc and Open MPI.
TOYQ_PYPROJECT = """\
[build-system]
requires = ["setuptools>=69"]
build-backend = "setuptools.build_meta"

[project]
name = "hpcbench-toyq"
version = "0.1.0"

[tool.setuptools]
py-modules = ["hpcbench_toyq", "toyq_cmd"]
script-files = ["toyrun"]

[project.entry-points."hpcbench.executors"]
toyq = "hpcbench_toyq:ToyExecutor"

[project.entry-points."hpcbench.schedulers"]
toyq = "hpcbench_toyq:ToyView"

[project.entry-points."hpcbench.launchers"]
toyrun = "hpcbench_toyq:ToyRun"
"""

TOYQ_CMD = '''\
"""toyq's commands: python -m toyq_cmd SPOOL submit SCRIPT CPUS | stat ID... | cancel ID..."""
import json
import os
import shutil
import socket
import signal
import socket
import subprocess
import sys
from pathlib import Path


def submit(spool, script, cpus):
    jid = f"{len(list(spool.glob('*.job'))) + 1}.toyq"
    env = {**os.environ, "TOYQ_JOB_ID": jid, "TOYQ_HOSTS": socket.gethostname(), "TOYQ_CPUS": cpus,
           "TOYQ_SPOOL": str(spool)}
    with open(spool / f"{jid}.log", "ab") as log:
        proc = subprocess.Popen(["bash", "-c", 'bash "$0"; echo $? > "$1.tmp" && mv "$1.tmp" "$1"', script,
                                 str(spool / f"{jid}.exit")], stdout=log, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
    (spool / f"{jid}.job").write_text(json.dumps({"pid": proc.pid, "script": script}))
    print(jid)


def state(spool, jid):
    if (spool / f"{jid}.cancelled").is_file():
        return {"state": "CANCELLED"}
    done = spool / f"{jid}.exit"
    if done.is_file():
        code = done.read_text().strip()
        return {"state": "COMPLETED" if code == "0" else "FAILED", "exit_code": code}
    return {"state": "RUNNING"}


def main():
    spool, verb, args = Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
    spool.mkdir(parents=True, exist_ok=True)
    if verb == "submit":
        submit(spool, *args)
    elif verb == "stat":
        print(json.dumps({j: state(spool, j) for j in args if (spool / f"{j}.job").is_file()}))
    elif verb == "cancel":
        for j in args:
            (spool / f"{j}.cancelled").touch()
            try:
                os.killpg(json.loads((spool / f"{j}.job").read_text())["pid"], signal.SIGTERM)
            except (ProcessLookupError, FileNotFoundError):
                pass


main()
'''

# The launcher: a wrapper of Open MPI's mpiexec that, like srun, works only inside its scheduler's
# allocation (it needs TOYQ_JOB_ID: the scheduler's variables must reach it) and takes the step's
# hosts as --hosts; it notes each step in the spool.
TOYRUN = '''\
#!/usr/bin/env python3
import os
import shutil
import socket
import sys

args = sys.argv[1:]
if not os.environ.get("TOYQ_JOB_ID"):
    sys.exit("toyrun: not inside a toyq allocation (TOYQ_JOB_ID is not set)")
hosts = ""
if "--hosts" in args:
    i = args.index("--hosts")
    hosts = args[i + 1]
    del args[i:i + 2]
with open(os.path.join(os.environ["TOYQ_SPOOL"], "steps.log"), "a") as f:
    f.write(f"{os.environ['TOYQ_JOB_ID']} {hosts}\\n")
os.execvp("mpiexec", ["mpiexec", *args])
'''

TOYQ_MODULE = '''\
"""A third-party scheduler for hpcbench: executor (login side), allocation view and settings
(compute side), and a launcher of its own."""
import json
import subprocess
import sys
from pathlib import Path

from pydantic import Field

from hpcbench.errors import HpcbenchError
from hpcbench.executors.backend import Backend, SchedInfo
from hpcbench.executors.batch import BatchExecutor
from hpcbench.jobs.launchers import LauncherPart
from hpcbench.schedulers.base import AllocationView
from hpcbench.schedulers.settings import BatchConfig


class ToySettings(BatchConfig):
    spool: str  # where toyq keeps its jobs: required, no default
    cpus_per_job: int = Field(2, ge=1)


class ToyView(AllocationView):
    batch = True
    settings = ToySettings
    env_prefixes = ("TOYQ_",)
    job_id_env = "TOYQ_JOB_ID"

    def hosts(self):
        return self.env["TOYQ_HOSTS"].split(",") if self.env.get("TOYQ_HOSTS") else super().hosts()

    def cores_per_node(self, planned):
        got = self.env.get("TOYQ_CPUS", "")
        return min(planned, int(got)) if got.isdigit() else planned


class ToyRun(LauncherPart):
    rank_vars = ("TOYRUN_RANK",)  # where it tells each rank its index (and on its node)
    local_rank_vars = ("TOYRUN_LOCAL_RANK",)

    @classmethod
    def recognises(cls, argv):
        return bool(argv) and Path(argv[0]).name == "toyrun"

    def on_hosts(self, argv, hosts, over, hostfile):
        return [argv[0], "--hosts", ",".join(hosts), *argv[1:]]


class ToyBackend(Backend):
    name = "toyq"
    submit_command = "toyq_cmd submit"

    def __init__(self, site, folder, specs_dir):
        self.site, self.folder, self.specs_dir = site, folder, specs_dir
        self.python = site.batch.python or sys.executable

    def _cmd(self, *args):
        p = subprocess.run([sys.executable, "-m", "toyq_cmd", self.site.batch.spool, *args], capture_output=True,
                           text=True, timeout=60)
        if p.returncode != 0:
            raise HpcbenchError(f"toyq {args[0]}: {p.stderr.strip()}")
        return p.stdout

    def _script(self, plan, command):
        return "\\n".join(["#!/bin/bash", f"# toyq: {plan.name}, {plan.walltime_min} min", *plan.setup, command, ""])

    def _job_command(self, job):
        return f"exec {self.python} -u -m hpcbench.jobs.job {self.specs_dir / (job.job_id + '.json')}"

    def render(self, plan, account):
        return self._script(plan, self._job_command(plan.jobs[0]))

    def submit_array(self, plan, account):
        self.folder.mkdir(parents=True, exist_ok=True)
        ids, script = [], None
        for j in plan.jobs:
            script = self.folder / f"{j.job_id}.sh"
            script.write_text(self._script(plan, self._job_command(j)))
            ids.append(self._cmd("submit", str(script), str(self.site.batch.cpus_per_job)).strip())
        return ids[0], ids, str(script)

    def render_pack(self, plan, account, manifest, command):
        return self._script(plan, command)

    def submit_pack(self, plan, account, manifest, key, command):
        self.folder.mkdir(parents=True, exist_ok=True)
        script = self.folder / f"{key}.sh"
        script.write_text(self._script(plan, command))
        return self._cmd("submit", str(script), str(plan.cores_per_node)).strip(), str(script)

    def poll(self, ids):
        got = json.loads(self._cmd("stat", *ids) or "{}") if ids else {}
        return {i: SchedInfo(s["state"], s.get("exit_code", "")) for i, s in got.items()}

    def cancel(self, ids):
        self._cmd("cancel", *ids)

    def log_tail(self, sched_id, n=1500):
        p = Path(self.site.batch.spool) / f"{sched_id}.log"
        return p.read_text(errors="replace")[-n:] if p.is_file() else ""


class ToyExecutor(BatchExecutor):
    scheduler = "toyq"

    def make_backend(self):
        return ToyBackend(self.site, self.sched_dir / "toyq", self.campaign.specs_dir)
'''


def _install_toyq(tmp: Path) -> Path:
    target = _pip_install(tmp, "toyq", {"pyproject.toml": TOYQ_PYPROJECT, "hpcbench_toyq.py": TOYQ_MODULE,
                                        "toyq_cmd.py": TOYQ_CMD, "toyrun": TOYRUN})
    assert os.access(target / "bin" / "toyrun", os.X_OK)
    return target


def _toyq_site(tmp: Path, batch: dict) -> Path:
    site = {"name": "toy-site", "scheduler": "toyq", "partitions": [{"name": "main", "max_walltime_min": 30}],
            "launcher": {"template": "toyrun -n {ranks}", "binding": "toyrun"},
            "variants": [{"name": "cpu", "petsc_dir": "auto"}], "batch": batch, "exclusive_nodes": True,
            "timing_repeats": 1, "valgrind": False, "storage_root": str(tmp / "campaigns")}
    path = tmp / "toy-site.yaml"
    path.write_text(yaml.safe_dump(site))
    return path


def _toyq(args: list[str], cwd: Path, plugin: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=str(plugin), PATH=f"{plugin / 'bin'}:{env['PATH']}")
    return subprocess.run([HPCBENCH, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=1200)


def test_a_plugin_scheduler_with_its_own_settings_view_and_launcher_runs_a_packed_campaign_and_a_sweep(tmp_path):
    plugin = _install_toyq(tmp_path)
    spool = tmp_path / "spool"
    host = socket.gethostname()

    # Its settings model: a field of its own is required, and an unknown one is refused, by file and field.
    for batch, said in (({"spool_dir": str(spool)}, "field 'batch.spool': Field required"),
                        ({"spool": str(spool), "spool_dir": "x"}, "field 'batch.spool_dir': Extra inputs"),
                        ({"spool": str(spool), "cpus_per_job": 0}, "field 'batch.cpus_per_job'")):
        site = _toyq_site(tmp_path, {"account_required": False, **batch})
        p = _toyq(["submit", "--dry-run", "--site", str(site), "--out", str(tmp_path / "x")], tmp_path, plugin)
        assert p.returncode == 2 and f"{site}: {said}" in p.stderr, p.stderr
    site = _toyq_site(tmp_path, {"account_required": False, "poll_s": 0.3, "spool": str(spool)})

    out = tmp_path / "campaign"
    p = _toyq(["run", "--profile", str(QUICK), "--site", str(site), "--agent", "reference", "--problems",
               "vec-scatter,rosenbrock", "--out", str(out)], tmp_path, plugin)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    ledger = json.loads((out / "scheduler" / "ledger.json").read_text())
    assert ledger["scheduler"] == "toyq" and ledger["submit_calls"] == 1  # packed: one allocation
    alloc = ledger["arrays"][0]["array_id"]
    assert alloc == "1.toyq" and {e["sched_id"] for e in ledger["jobs"].values()} == {alloc}
    # The driver read the allocation through the plugin's view: its id and hosts.
    summary = json.loads(next((out / "scheduler" / "pack").glob("*.summary.json")).read_text())
    assert summary["allocation"] == alloc and summary["hosts"] == [host]
    assert sorted(summary["finished"]) == sorted(ledger["jobs"])
    for jid in ledger["jobs"]:
        rec = json.loads((out / "records" / f"{jid}.json").read_text())
        assert rec["status"] == "done" and rec["scheduler_job_id"] == alloc, rec.get("reason")
        for run in rec["runs"]:
            # the plugin's launcher put each step on the job's host, and it saw the scheduler's variables
            assert run["command"][:2] == ["toyrun", "--hosts"] and run["command"][2] == host, run["command"]
            assert run["exit_code"] == 0 and run["placement"]["packed"]
    steps = (spool / "steps.log").read_text().splitlines()
    assert steps and set(steps) == {f"{alloc} {host}"}
    assert "reference" in p.stdout  # scored and on the leaderboard

    sweep = tmp_path / "sweep"
    p = _toyq(["sweep", "--site", str(site), "--agent", "reference", "--problems", "advection1d", "--ranks", "1,2",
               "--sizes", "400000", "--repeats", "1", "--out", str(sweep)], tmp_path, plugin)
    assert p.returncode == 0 and "report:" in p.stdout, p.stdout[-3000:] + p.stderr[-3000:]
    ledger = json.loads((sweep / "scheduler" / "ledger.json").read_text())
    assert ledger["submit_calls"] == 1 and ledger["arrays"][0]["array_id"] == "2.toyq"
    base = json.loads((sweep / "machine" / "baseline-cpu.json").read_text())
    assert [pt["ranks"] for pt in base["points"]] == [1, 2] and not any(pt.get("error") for pt in base["points"])
    rec = json.loads((sweep / "records" / "reference__advection1d__1.json").read_text())
    timed = {r["ranks"] for r in rec["runs"] if r["kind"] == "timing" and r["exit_code"] == 0}
    assert timed == {1, 2}
    assert all(r["command"][0] == "toyrun" for r in rec["runs"])


RANK_PROBE = """\
import json, os, subprocess, sys
from pathlib import Path

from hpcbench.jobs.affinity import probe_prefix, read_probes
from hpcbench.jobs.launchers import launcher_of, local_rank_variables, rank_variables
from hpcbench.jobs.records import Launcher
from hpcbench.jobs.valgrind import valgrind_prefix

tmp = Path(sys.argv[1])
rank_vars = rank_variables(launcher_of(Launcher(template="toyrun -n {ranks}", binding="toyrun")))
# a rank toyrun started, inside a batch step whose own rank variables say 0
env = {**os.environ, "TOYRUN_RANK": "3", "TOYRUN_LOCAL_RANK": "1", "SLURM_PROCID": "0", "PMI_RANK": "0"}
subprocess.run(probe_prefix(tmp / "probes", rank_vars) + ["true"], env=env, check=True)
subprocess.run(valgrind_prefix(tmp / "logs", tmp, rank_vars) + ["true"], env=env, check=True, capture_output=True)
gpu = subprocess.run([sys.executable, "-m", "hpcbench.jobs.gpu_bind", "CUDA_VISIBLE_DEVICES", "3,2,1,0", "sh", "-c",
                      "echo $CUDA_VISIBLE_DEVICES"], env=env, check=True, capture_output=True, text=True).stdout
probed = [a.rank for a in read_probes(tmp / "probes")]
print(json.dumps({"rank_vars": rank_vars, "local": local_rank_variables(), "probed": probed,
                  "reports": sorted(p.name for p in (tmp / "logs").iterdir()), "gpu": gpu.strip()}))
"""


@pytest.mark.skipif(not shutil.which("valgrind"), reason="valgrind is not installed")
def test_a_plugin_launcher_names_its_own_rank_variables(tmp_path):
    """The rank variables are the launcher's to name: a toyrun run's affinity probe, valgrind's
    per-rank report and gpu_bind read toyrun's own, before any other launcher's (an inherited
    SLURM_PROCID or PMI_RANK of 0 would put every rank's report in one file)."""
    plugin = _install_toyq(tmp_path)
    (tmp_path / "logs").mkdir()
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "PYTHONPATH": str(plugin)}
    p = subprocess.run([sys.executable, "-c", RANK_PROBE, str(tmp_path)], capture_output=True, text=True, env=env,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads(p.stdout.splitlines()[-1])
    assert got["rank_vars"][0] == "TOYRUN_RANK" and "SLURM_PROCID" in got["rank_vars"]  # its own, then the others
    assert "TOYRUN_LOCAL_RANK" in got["local"]
    assert got["probed"] == [3] and got["reports"] == ["valgrind.3.xml"]
    assert got["gpu"] == "2"  # the local rank 1's entry of 3,2,1,0
