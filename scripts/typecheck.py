"""mypy over the package as it is installed: pyproject's package-dir maps hpcbench.jobs to
jobs/, hpcbench.evaluators to evaluators/, ..., which mypy's module finder cannot follow
(the editable install is an import hook, and mypy names a file by its folder). So every
module is handed to mypy with its import name; the options come from [tool.mypy].

    .venv/bin/python scripts/typecheck.py      (scripts/test.sh runs it before pytest)"""

from __future__ import annotations

import sys
from pathlib import Path

import tomllib
from mypy import build
from mypy.errors import CompileError
from mypy.main import process_options
from mypy.modulefinder import BuildSource

ROOT = Path(__file__).resolve().parents[1]


def package_folder(pkg: str, package_dir: dict[str, str]) -> Path:
    """setuptools' rule: the longest mapped prefix, the rest of the name as folders under it."""
    parts = pkg.split(".")
    for n in range(len(parts), 0, -1):
        head = ".".join(parts[:n])
        if head in package_dir:
            return ROOT / package_dir[head] / Path(*parts[n:])
    return ROOT / Path(*parts)


def sources() -> list[BuildSource]:
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    out = []
    for pkg in cfg["packages"]:
        folder = package_folder(pkg, cfg.get("package-dir", {}))
        for f in sorted(folder.glob("*.py")):
            module = pkg if f.stem == "__init__" else f"{pkg}.{f.stem}"
            out.append(BuildSource(str(f.relative_to(ROOT)), module, None, str(ROOT)))
    return out


def main() -> int:
    _, options = process_options(["--config-file", str(ROOT / "pyproject.toml"), str(ROOT / "pyproject.toml")])
    srcs = sources()
    try:
        res = build.build(srcs, options)
        errors = res.errors
    except CompileError as e:  # a blocking error (syntax, a module found twice)
        errors = e.messages
    for line in errors:
        print(line)
    n = sum(": error:" in line for line in errors)
    print(f"mypy: {n} error(s) in {len(srcs)} modules" if n else f"mypy: no issues in {len(srcs)} modules")
    return 1 if n else 0


if __name__ == "__main__":
    sys.exit(main())
