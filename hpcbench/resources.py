"""Paths to the data shipped inside the package (problems, site configs, examples).

In the repository they are top-level folders; setuptools maps them to
`hpcbench.data.*` so a non-editable install carries them too."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

_REPO_ROOT = Path(__file__).resolve().parent.parent
_NAMES = {"problems": "problems", "site_configs": "site-configs", "examples": "examples", "probes": "probes"}


def data_path(name: str) -> Path:
    """Folder of bundled data `name` (problems | site_configs | examples | probes)."""
    folder = _REPO_ROOT / _NAMES[name]
    if folder.is_dir() and (_REPO_ROOT / "pyproject.toml").is_file():
        return folder
    return Path(str(resources.files(f"hpcbench.data.{name}")))
