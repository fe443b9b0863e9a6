"""Extending hpcbench from outside the tree: a tiny package with an evaluator, an executor
(scheduler) and an agent kind, declared as entry points, is installed into a temporary
folder (`pip install --target`, put on PYTHONPATH: our venv is not touched), and a real
`hpcbench run` (real PETSc, real MPI) uses all three: the site file names the plugin's
scheduler, `--agent demo:...` is dispatched to the plugin's factory, and the scoring holds
the plugin evaluator's score. Nothing here is a stand-in: the plugin is a real package."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from hpcbench.resources import data_path
from hpcbench.store.scorings import read_scoring

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


def _install(tmp: Path) -> Path:
    src, target = tmp / "plugin", tmp / "site-packages"
    src.mkdir()
    (src / "pyproject.toml").write_text(PYPROJECT)
    (src / "hpcbench_demo.py").write_text(MODULE)
    # No network, no build isolation: setuptools comes from our venv; --target keeps it out of the venv.
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                    "--target", str(target), str(src)], check=True, capture_output=True, text=True, cwd=tmp)
    return target


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

    p = _hpcbench(["run", "--site", str(site), "--agent", f"demo:{ref}", "--problems", "rosenbrock",
                   "--out", str(out)], tmp_path, plugin)
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
    src, target = tmp_path / "plugin", tmp_path / "site-packages"
    src.mkdir()
    (src / "pyproject.toml").write_text(textwrap.dedent("""\
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
        """))
    (src / "hpcbench_broken.py").write_text("raise RuntimeError('half-installed')\n")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                    "--target", str(target), str(src)], check=True, capture_output=True, text=True, cwd=tmp_path)
    site = tmp_path / "broken.yaml"
    site.write_text("name: broken\nscheduler: broken\npartitions: [{name: q}]\n")
    p = _hpcbench(["submit", "--dry-run", "--site", str(site), "--out", str(tmp_path / "c")], tmp_path, target)
    assert p.returncode != 0
    assert "hpcbench-broken-plugin" in p.stderr and "half-installed" in p.stderr
