"""Plan-time snapshot: everything scoring depends on, copied into the campaign
folder when the campaign is planned, so that collect and score read the
campaign folder only (never the checkout or the machine they run on).

    <campaign>/snapshot/
      problems.json                 {id: {problem_sha256, checks_sha256}}
      problems/<id>/problem.json    byte copies of the problem as planned
      problems/<id>/checks.json     (hidden checks)
      petsc_api/<variant>.json      PetscErrorCode functions and deprecated names of the
                                    variant's PETSc headers, or {"error": why not}

A problem already in the snapshot is not replaced: re-planning (resume) after editing a
problem file does not change what the campaign is scored against. A profile with
`resnapshot` (validation, which measures the checks as they are now) clears it at each plan;
a profile that runs a selection of the cases snapshots the problem as run (problem_files)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from pydantic import ValidationError

from hpcbench.errors import HpcbenchError
from hpcbench.jobs.records import write_atomic
from hpcbench.petsc_headers import PetscApi, scan_install
from hpcbench.plan.staging import sha256
from hpcbench.problem import Checks, Problem, ProblemBundle


def snapshot_dir(root: Path) -> Path:
    return Path(root) / "snapshot"


def clear_problems(root: Path) -> None:
    """Forget the problems as first planned: the next plan snapshots them as they are now."""
    snap = snapshot_dir(root)
    shutil.rmtree(snap / "problems", ignore_errors=True)
    (snap / "problems.json").unlink(missing_ok=True)


def problem_files(b: ProblemBundle, as_run: bool) -> dict[str, bytes]:
    """problem.json and checks.json as the campaign runs the problem: the folder's bytes, or
    (`as_run`: a profile ran a selection of its cases, plan/cases.py) the bundle in memory."""
    if not as_run:
        return {name: (b.folder / name).read_bytes() for name in ("problem.json", "checks.json")}
    return {name: (model.model_dump_json(indent=1, exclude_none=True) + "\n").encode()
            for name, model in (("problem.json", b.problem), ("checks.json", b.checks))}


def write_snapshot(root: Path, problems: dict[str, ProblemBundle], petsc: dict[str, dict], as_run: bool = False
                   ) -> None:
    """Copy the problems' files (first plan wins; `as_run`: problem_files) and scan each variant's
    PETSc headers (`petsc`: the manifest's variant -> {petsc_dir, petsc_arch} or {error})."""
    snap = snapshot_dir(root)
    index_path = snap / "problems.json"
    index = json.loads(index_path.read_text()) if index_path.is_file() else {}
    for pid, b in sorted(problems.items()):
        if pid in index:
            continue
        entry = {}
        for name, data in problem_files(b, as_run).items():
            write_atomic(snap / "problems" / pid / name, data.decode())
            entry[name.replace(".json", "_sha256")] = sha256(data)
        index[pid] = entry
    write_atomic(index_path, json.dumps(index, indent=1, sort_keys=True))
    for name, v in sorted(petsc.items()):
        out = snap / "petsc_api" / f"{name}.json"
        if out.is_file():
            continue
        if not v.get("petsc_dir"):
            facts = {"error": v.get("error") or f"variant {name}: no PETSc found at planning"}
        else:
            try:
                facts = scan_install(v["petsc_dir"], v.get("petsc_arch", "")).to_json()
            except OSError as e:
                facts = {"error": f"variant {name}: {e}"}
        write_atomic(out, json.dumps(facts, sort_keys=True))


def read_problems(root: Path) -> dict[str, tuple[Problem, Checks, dict]]:
    """The snapshot's problems, each file checked against the sha256 taken at planning."""
    snap = snapshot_dir(root)
    index_path = snap / "problems.json"
    if not index_path.is_file():
        raise HpcbenchError(f"{index_path}: missing; this campaign was planned before plan-time snapshots "
                            "(store schema 1). Re-plan it (hpcbench run/submit with --out on the same folder) "
                            "or collect it with the hpcbench version that planned it")
    out = {}
    for pid, entry in json.loads(index_path.read_text()).items():
        texts = {}
        for name in ("problem.json", "checks.json"):
            path = snap / "problems" / pid / name
            data = path.read_bytes() if path.is_file() else b""
            want = entry.get(name.replace(".json", "_sha256"), "")
            if sha256(data) != want:
                raise HpcbenchError(f"{path}: sha256 {sha256(data)[:12]} differs from the {want[:12]} recorded "
                                    f"at planning in {index_path}; the snapshot was altered")
            texts[name] = data
        try:
            out[pid] = (Problem.model_validate_json(texts["problem.json"]),
                        Checks.model_validate_json(texts["checks.json"]), entry)
        except ValidationError as e:
            raise HpcbenchError(f"{snap / 'problems' / pid}: invalid problem snapshot: {e}") from None
    return out


def read_snapshot_petsc_api(root: Path) -> tuple[PetscApi | None, str]:
    """Union of the variants' scanned API facts, and the errors of variants that had none."""
    api: PetscApi | None = None
    errors = []
    for p in sorted((snapshot_dir(root) / "petsc_api").glob("*.json")):
        d = json.loads(p.read_text())
        if "error" in d:
            errors.append(d["error"])
            continue
        got = PetscApi(version=d["version"], source=d["source"], errorcode_functions=set(d["errorcode_functions"]),
                       deprecated=dict(d["deprecated"]))
        if api is None:
            api = got
        else:
            api.errorcode_functions |= got.errorcode_functions
            api.deprecated.update(got.deprecated)
            api.source += f"; {got.source}"
    return api, "; ".join(errors) or ("" if api else "no PETSc API facts in the plan-time snapshot")
