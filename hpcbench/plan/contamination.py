"""Plan-time contamination measure: each planned program (references included) against
PETSc's own tutorials and tests of the campaign's PETSc version (hpcbench.contamination),
written to `snapshot/contamination.json` so that collect, score and report read it from
the campaign alone:

    {"corpus": {"source", "version", "files"}, "k", "threshold", "method",
     "programs": {"agent/problem/attempt": {"file", "similarity", "grams", "near_copy"}}}
or {"error": why not measured} when no PETSc source is found (an installed PETSc keeps
no tutorials: docs/problems.md says where the source comes from).

A program already measured is not measured again on a re-plan."""

from __future__ import annotations

import json
from pathlib import Path

from hpcbench.contamination import THRESHOLD, K, default_source, folder_sources, open_index, program_match
from hpcbench.errors import HpcbenchError
from hpcbench.jobs.records import write_atomic
from hpcbench.submission import LoadedSubmission

METHOD = (f"share of the program's token {K}-grams (tree-sitter-c tokens; its own names, numbers, strings and "
          "comments abstracted) found in the nearest file among the tutorials and tests of PETSc's source")


def contamination_path(root: Path) -> Path:
    return Path(root) / "snapshot" / "contamination.json"


def write_contamination(root: Path, staged: dict[str, Path], petsc: dict[str, dict]) -> None:
    """Measure every staged program (`staged`: "agent/problem/attempt" -> its staged folder)
    not measured yet, against the PETSc source of the first variant that has one."""
    path = contamination_path(root)
    data = json.loads(path.read_text()) if path.is_file() else {}
    programs = data.get("programs", {})
    todo = {k: v for k, v in staged.items() if k not in programs}
    if not todo and path.is_file():
        return
    found = next((v for v in petsc.values() if v.get("petsc_dir")), None)
    if found is None:
        write_atomic(path, json.dumps({"error": "no PETSc found at planning"}))
        return
    try:
        index = open_index(default_source(Path(found["petsc_dir"]), found["version"]), found["version"])
    except (HpcbenchError, OSError, ValueError) as e:
        write_atomic(path, json.dumps({"error": f"not measured: {e}"}))
        return
    for key, folder in sorted(todo.items()):
        sources = folder_sources(folder) if folder.is_dir() else {}
        if sources:
            programs[key] = program_match(index, sources).as_dict()
    data = {"corpus": {"source": index.source, "version": index.version, "files": len(index.names)},
            "k": K, "threshold": THRESHOLD, "method": METHOD, "programs": programs}
    write_atomic(path, json.dumps(data, indent=1, sort_keys=True))


def staged_programs(submissions_dir: Path, submissions: list[LoadedSubmission]) -> dict[str, Path]:
    """The staged folder of every submission that has source files."""
    return {"/".join(s.key): Path(submissions_dir, *s.key) for s in submissions
            if s.meta.files and not s.meta.refused and not s.meta.generation_error}
