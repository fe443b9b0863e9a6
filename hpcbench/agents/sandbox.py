"""Compile and run untrusted sources on demand, exactly as a job does.

The MCP server's `compile` and `run` tools and the repair agent's local build
both come here. It is built on the jobs code (hpcbench.jobs.build for PETSc's
makefiles, jobs.launch for the site's launcher, jobs.capture for the limits):
each build is a fresh folder holding only the given files, names checked like a
submission's; each build and run happens in the site's sandbox (jobs/sandbox.py:
only its build folder writable, PETSc and the toolchain read-only, no network, no
key in its environment) with the site's limits per step, output cap, flood stop
and a wall-clock limit, its process group killed at the end. Nothing hidden
(problems' references or checks) is reachable from here: callers pass sources,
not problems, and the sandbox shows no other folder."""

from __future__ import annotations

import atexit
import math
import re
import shutil
import tempfile
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hpcbench.jobs.build import BINARY_NAME, build_submission
from hpcbench.jobs.capture import Confinement, run_captured
from hpcbench.jobs.launch import launch_argv, run_env
from hpcbench.jobs.sandbox import Step
from hpcbench.petsc_env import PetscInstall
from hpcbench.site import SiteConfig
from hpcbench.submission import MAX_FILE_BYTES, MAX_FILES, check_file_name

MAX_RANKS = 64
MAX_TIME_LIMIT_S = 600.0
BUILD_TIMEOUT_S = 300.0
KEEP_BUILDS = 32
_DIAG = re.compile(r"^(.*?:\d+:\d+: (?:fatal )?(?:error|warning): .*)$", re.M)


@dataclass
class Sandbox:
    site: SiteConfig
    petsc: PetscInstall
    root: Path
    runtime_options: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._builds: list[str] = []

    @classmethod
    def for_site(cls, site: SiteConfig, root: Path | None = None) -> Sandbox:
        from hpcbench.petsc_env import find_variant

        variant = site.variants[0]
        petsc = find_variant(variant.petsc_dir, variant.petsc_arch)
        if root is None:  # a private folder, removed when the process ends
            root = Path(tempfile.mkdtemp(prefix="hpcbench-sandbox-"))
            atexit.register(shutil.rmtree, root, True)
        return cls(site, petsc, root, tuple(variant.runtime_options))

    def compile(self, files: dict[str, str], entry: str) -> dict[str, Any]:
        """Build `files` with PETSc's makefiles. Problems with the input and compiler
        errors come back as data (`ok: false`), never as exceptions."""
        problem = self._check_files(files, entry)
        if problem:
            return {"ok": False, "build_id": "", "error": problem, "errors": [], "exit_code": None}
        build_id = uuid.uuid4().hex[:16]
        folder = self.root / build_id
        folder.mkdir()
        for name, text in files.items():
            dest = folder / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(text)
        res = build_submission(folder, list(files), entry, self.petsc, timeout_s=BUILD_TIMEOUT_S,
                               output_cap=256 * 1024, isolation=self._isolation(),
                               confinement=Confinement(self.site.limits))
        ok = res.exit_code == 0 and (folder / BINARY_NAME).is_file()
        self._remember(build_id) if ok else shutil.rmtree(folder, ignore_errors=True)
        diags = _DIAG.findall(res.stderr + "\n" + res.stdout)
        return {"ok": ok, "build_id": build_id if ok else "", "exit_code": res.exit_code,
                "timed_out": res.timed_out, "wall_s": round(res.wall_s, 3),
                "errors": [d for d in diags if ": error: " in d or "fatal error" in d][:50],
                "warnings": [d for d in diags if ": warning: " in d][:50],
                "stdout": res.stdout[-16000:], "stderr": res.stderr[-16000:], "command": res.command}

    def run(self, build_id: str, args: list[str] | None = None, ranks: int = 1,
            time_limit_s: float = 60.0) -> dict[str, Any]:
        """Run a build at `ranks` ranks under the site's launcher and limits."""
        if not re.fullmatch(r"[0-9a-f]{16}", build_id or "") or not (self.root / build_id / BINARY_NAME).is_file():
            return {"ok": False, "error": f"unknown build_id {build_id!r}: compile first"}
        # every number finite and bounded: min(nan, 600) is nan, which once ran with no limit
        if isinstance(ranks, bool) or not isinstance(ranks, (int, float)) or not math.isfinite(ranks) \
                or ranks != int(ranks) or not 1 <= int(ranks) <= MAX_RANKS:
            return {"ok": False, "error": f"ranks must be a whole number 1..{MAX_RANKS}, got {ranks!r}"}
        if not all(isinstance(a, str) for a in args or []):
            return {"ok": False, "error": "args must be strings"}
        try:
            limit = float(time_limit_s)
        except (TypeError, ValueError):
            limit = math.nan
        if not math.isfinite(limit) or limit <= 0:
            return {"ok": False, "error": f"time_limit_s must be a positive number of seconds, got {time_limit_s!r}"}
        limit = min(limit, MAX_TIME_LIMIT_S)
        folder = self.root / build_id
        program = [str(folder / BINARY_NAME), *(args or []), *self.runtime_options]
        # The launcher runs inside the sandbox here, with its ranks, as in a local job.
        step = Step(self._isolation(), self.petsc, cwd=folder, writable=[folder])
        argv, over = launch_argv(self.site.launcher, int(ranks), self.site.total_cores(), program)
        env = run_env(self.petsc.env(), self.site.launcher)  # as in a job
        cap = run_captured(argv, cwd=folder, env=env, timeout_s=limit, output_cap=self.site.limits.output_bytes,
                           step=step, confinement=Confinement(self.site.limits))
        return {"ok": cap.exit_code == 0, "exit_code": cap.exit_code, "signal": cap.signal,
                "timed_out": cap.timed_out, "stopped_reason": cap.stopped_reason, "wall_s": round(cap.wall_s, 3),
                "ranks": int(ranks), "oversubscribed": over, "command": argv, "isolation": step.level,
                "stdout": cap.stdout[-64000:], "stderr": cap.stderr[-16000:],
                "stdout_truncated": cap.stdout_truncated or len(cap.stdout) > 64000,
                "stderr_truncated": cap.stderr_truncated or len(cap.stderr) > 16000}

    def _isolation(self):
        """The site's sandbox, around the whole launch: tools run on this machine, not in a batch job."""
        return self.site.sandbox().model_copy(update={"per_rank": False})

    def _check_files(self, files: dict[str, str], entry: str) -> str:
        if not isinstance(files, dict) or not files:
            return "files must be a non-empty mapping of file name to source text"
        if len(files) > MAX_FILES:
            return f"at most {MAX_FILES} files"
        for name, text in files.items():
            try:
                check_file_name(name)
            except ValueError as e:
                return str(e)
            if not isinstance(text, str) or "\x00" in text:
                return f"{name!r} must be text"
            if len(text.encode("utf-8")) > MAX_FILE_BYTES:
                return f"{name!r} is larger than {MAX_FILE_BYTES} bytes"
        if entry not in files:
            return f"entry {entry!r} is not among files {sorted(files)}"
        if not entry.endswith((".c", ".cu", ".cxx")):
            return f"entry {entry!r} is not a compilable source"
        return ""

    def _remember(self, build_id: str) -> None:
        with self._lock:
            self._builds.append(build_id)
            while len(self._builds) > KEEP_BUILDS:
                shutil.rmtree(self.root / self._builds.pop(0), ignore_errors=True)
