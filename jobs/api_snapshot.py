"""The PETSc API facts of a campaign's snapshot, taken inside a job where the
planner could not reach the variant's PETSc (a dry run planned for a cluster).
Stdlib only, like the rest of the job side."""

from __future__ import annotations

import json
from pathlib import Path

from hpcbench.jobs.records import write_atomic
from hpcbench.petsc_headers import scan_install


def ensure_petsc_api(record_path: str, variant: str, petsc_dir: str | Path, petsc_arch: str) -> None:
    """Write <campaign>/snapshot/petsc_api/<variant>.json unless planning already scanned it."""
    out = Path(record_path).parent.parent / "snapshot" / "petsc_api" / f"{variant}.json"
    try:
        if out.is_file() and "error" not in json.loads(out.read_text()):
            return
        write_atomic(out, json.dumps(scan_install(petsc_dir, petsc_arch).to_json(), sort_keys=True))
    except (OSError, ValueError):
        return  # scoring then recognises PETSc calls by name prefix, at lower confidence
