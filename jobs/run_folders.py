"""Folders of one run: every run of a job (instrumented, each timing repeat, null, valgrind)
starts from a fresh copy of the submission's files in folders of its own, so nothing one
run writes reaches another: an answer cached by the instrumented run, a `petscrc` that
slows the null program, a link planted for the driver to follow later.

    work/<job>/runs/<n>-<kind>-<case>-r<ranks>/run    the program's working folder
                                               /logs   what the instruments write
                                               /tmp    per-rank sandboxes: /tmp and /dev/shm

Inside the sandbox every run sees them at the same paths (work/<job>/run, work/<job>/logs),
so its argv and working folder do not say which run it is. The null program's folder holds
nothing of the submission."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from hpcbench.jobs.records import JobSpec
from hpcbench.jobs.sandbox import Step
from hpcbench.petsc_env import PetscInstall


def stage_sources(spec: JobSpec, dest: Path) -> None:
    """Copy only the submission's own files; names were validated when loaded."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    src = Path(spec.source_dir)
    for name in spec.files:
        target = (dest / name).resolve()
        if dest.resolve() not in target.parents:
            raise ValueError(f"file name escapes the build folder: {name!r}")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src / name, target)


@dataclass
class RunFolders:
    root: Path
    run: Path  # host paths
    logs: Path
    step: Step

    @property
    def logs_inside(self) -> Path:
        """The log folder as the run sees it (the paths its argv names)."""
        return self.step.inside(self.logs)

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def fresh_folders(spec: JobSpec, petsc: PetscInstall, name: str, readonly: list[Path],
                  with_sources: bool, hidden: list[Path] | None = None) -> RunFolders:
    work = Path(spec.work_dir)
    root = work / "runs" / name
    if root.exists():
        shutil.rmtree(root)
    run, logs = root / "run", root / "logs"
    if with_sources:
        stage_sources(spec, run)
    else:
        run.mkdir(parents=True)
    logs.mkdir(parents=True)
    scratch = root / "tmp" if spec.isolation.per_rank else None
    step = Step(spec.isolation, petsc, cwd=work / "run", writable=[run, logs], readonly=readonly,
                scratch=scratch, at={run: work / "run", logs: work / "logs"}, hidden=list(hidden or []))
    if step.level == "none":
        step.cwd = run
    return RunFolders(root, run, logs, step)
