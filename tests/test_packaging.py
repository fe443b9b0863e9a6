"""A non-editable install carries the jobs, evaluators and bundled data."""

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_contains_mapped_packages_and_data(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp_path), str(ROOT)], check=True)
    wheel = next(tmp_path.glob("hpcbench-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for must in ("hpcbench/jobs/job.py", "hpcbench/evaluators/gates/memory_safety.py",
                 "hpcbench/data/problems/vec-scatter/problem.json",
                 "hpcbench/data/problems/vec-scatter/reference/main.c",
                 "hpcbench/data/site_configs/local.yaml",
                 "hpcbench/data/examples/submissions/leaky-coder/vec-scatter/1/main.c",
                 "hpcbench/judge/runner.py", "hpcbench/evaluators/judged/solver_choice.py",
                 "hpcbench/evaluators/prompts/solver_choice.v1.txt",
                 "hpcbench/agents/a2a_agent.py", "hpcbench/agents/mcp_server.py", "hpcbench/evaluators/refusal.py",
                 "hpcbench/data/problems/refuse-mumps/reference/submission.json", "hpcbench/report/html.py",
                 "hpcbench/data/problems/darcy-dmplex/checks.json",
                 # validate-checks works from an installed package: the libraries travel with the problems
                 "hpcbench/data/problems/cavity-dmstag/mutants/mutants.json",
                 "hpcbench/data/problems/rosenbrock/mutants/mutants.json",
                 "hpcbench/data/probes/v1/probes.json", "hpcbench/validation/calibration/calibrate.py",
                 "hpcbench/score/judge_trust.py", "hpcbench/evaluators/judged/base.py",
                 "hpcbench/data/probes/v1/submissions/probe/robertson/p18/main.c",
                 # every stage package (pyproject lists packages one by one)
                 "hpcbench/cli/campaign.py", "hpcbench/plan/gather.py", "hpcbench/store/collect.py",
                 "hpcbench/score/scoring.py", "hpcbench/validation/calibration/probes.py", "hpcbench/report/explain.py",
                 "hpcbench/doctor.py", "hpcbench/cli/sweep.py",
                 "hpcbench/sweep/analysis.py", "hpcbench/sweep/tables.py", "hpcbench/report/scaling.py",
                 "hpcbench/evaluators/metrics/scalability.py", "hpcbench/executors/pack.py",
                 "hpcbench/machine_baseline.py", "hpcbench/jobs/pack.py", "hpcbench/jobs/baseline.py",
                 "hpcbench/jobs/launchers.py", "hpcbench/schedulers/base.py", "hpcbench/schedulers/slurm.py",
                 "hpcbench/data/examples/submissions/rank0-coder/advection1d/1/main.c"):
        assert must in names, must
    # every module of the source tree, wherever package-dir maps it (a package missing from
    # pyproject's list leaves a verb broken in a non-editable install: hpcbench.mutation once was)
    sources = {"hpcbench": ROOT / "hpcbench", "hpcbench/jobs": ROOT / "jobs",
               "hpcbench/evaluators": ROOT / "evaluators"}
    for prefix, folder in sources.items():
        for f in folder.rglob("*.py"):
            assert f"{prefix}/{f.relative_to(folder).as_posix()}" in names, f
    # and no campaign: a campaign folder planned by accident inside problems/ once shipped in it
    planned = [n for n in names if n.endswith(("/campaign.json", "/run.json")) or "/specs/" in n or "/snapshot/" in n]
    assert not planned, planned
