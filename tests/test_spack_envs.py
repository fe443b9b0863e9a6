"""The per-site Spack environments (spack/<site>/spack.yaml) against Spack's own package recipes.

Spack cannot be installed here, but its recipes (the spack/spack-packages repository) can be
read: every spec of every environment, and every external and requirement, names only variants
its recipe declares (where their `when` holds), with values the variant takes, and triggers none
of the recipe's `conflicts`. PETSc is pinned to the version the local set-up builds.

The recipes are looked for in $HPCBENCH_SPACK_PACKAGES, else .venv/spack-packages (scripts/setup.sh
downloads the pinned commit there when GitHub can be reached). Where they cannot be had, the
recipe tests are SKIPPED, and say so: not run, never passed."""

from __future__ import annotations

import ast
import hashlib
import os
import re
from pathlib import Path

import pytest
import yaml

from tests.spack_recipes import Known, Node, RecipeReader, check_node, parse_spec

ROOT = Path(__file__).resolve().parent.parent
SITES = ("polaris", "aurora", "frontier", "perlmutter")
PINNED_COMMIT = "1e8cf059e35d55c4fe1142fed41785bedf6c7246"  # spack/spack-packages, 2026-07-01
OVERLAY = ROOT / "spack" / "repo" / "spack_repo" / "hpcbench" / "packages"
COMPILER_PACKAGES = {"oneapi": "intel-oneapi-compilers", "gcc": "gcc", "cce": "cce"}


def local_petsc_version() -> str:
    m = re.search(r"^PETSC_VERSION=(\S+)$", (ROOT / "scripts" / "setup.sh").read_text(), re.M)
    assert m, "scripts/setup.sh names no PETSC_VERSION"
    return m.group(1)


def recipes_root() -> Path | None:
    base = Path(os.environ.get("HPCBENCH_SPACK_PACKAGES", ROOT / ".venv" / "spack-packages"))
    root = base / "repos"
    return root if (root / "spack_repo" / "builtin" / "packages" / "petsc" / "package.py").is_file() else None


needs_recipes = pytest.mark.skipif(
    recipes_root() is None,
    reason="Spack's recipes (spack/spack-packages) are not here: GitHub cannot be reached from this machine to "
           "download them (scripts/setup.sh tries); set HPCBENCH_SPACK_PACKAGES to a checkout. NOT RUN.")


def env(site: str) -> dict:
    return yaml.safe_load((ROOT / "spack" / site / "spack.yaml").read_text())["spack"]


def overlay_versions(pkg: str) -> dict[str, str]:
    """version -> sha256 that hpcbench's overlay repo adds to a builtin recipe."""
    path = OVERLAY / pkg.replace("-", "_") / "package.py"
    if not path.is_file():
        return {}
    out = {}
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "version":
            sha = next(k.value.value for k in node.keywords if k.arg == "sha256")  # type: ignore[attr-defined]
            out[node.args[0].value] = sha  # type: ignore[attr-defined]
    return out


def known_of(e: dict) -> Known:
    """What the environment's packages section fixes: externals and requirements, by name."""
    nodes: dict[str, Node] = {}
    for name, cfg in (e.get("packages") or {}).items():
        for ext in cfg.get("externals", []) or []:
            nodes[name] = parse_spec(ext["spec"]).root
        for req in cfg.get("require", []) or []:
            if isinstance(req, str) and not req.startswith(("@", "+", "~", "%")) and " " not in req \
                    and "=" not in req:
                continue  # a virtual's provider (mpi: cray-mpich)
            spec = parse_spec(req if isinstance(req, str) else req.get("spec", ""), name)
            node = nodes.setdefault(name, Node(name))
            node.variants.update(spec.root.variants)
            node.version = node.version or spec.root.version
            for dep, dnode in spec.deps.items():
                nodes.setdefault(dep, dnode)
    for short, pkg in COMPILER_PACKAGES.items():  # %oneapi@2025 reads the compiler package's version
        if pkg in nodes and short not in nodes:
            nodes[short] = Node(short, nodes[pkg].version)
    return Known(nodes)


def problems_of(reader: RecipeReader, e: dict) -> list[str]:
    known = known_of(e)
    out = []
    for spec_text in e["specs"]:
        spec = parse_spec(spec_text)
        nodes = {spec.root.name: spec.root, **{k: v for k, v in spec.deps.items() if k not in COMPILER_PACKAGES}}
        for name, node in nodes.items():
            have = known.node(name)
            merged = Node(name, node.version or (have.version if have else ""),
                          {**(have.variants if have else {}), **node.variants})
            scope = Known({**known.nodes, **spec.deps, name: merged})
            out += [f"{spec_text}: {p}" for p in check_node(reader, merged, scope, set(overlay_versions(name)))]
    for name, cfg in (e.get("packages") or {}).items():
        if name in ("all", "mpi"):
            continue
        for ext in cfg.get("externals", []) or []:  # externals: any version, but real variants
            node = parse_spec(ext["spec"]).root
            out += [f"external {ext['spec']}: {p}" for p in check_node(reader, Node(name, "", node.variants),
                                                                      known) if "version" not in p]
        node = known.node(name)
        if cfg.get("require") and node is not None and node.variants:
            out += [f"require {cfg['require']}: {p}" for p in check_node(reader, Node(name, "", node.variants),
                                                                        known)]
    return out


def test_every_site_has_an_environment_with_petsc_pinned_to_the_local_version():
    version = local_petsc_version()
    for site in SITES:
        e = env(site)
        petscs = [s for s in e["specs"] if s.startswith("petsc@")]
        assert len(petscs) == 2, (site, petscs)  # the site file's cpu and GPU variants
        assert all(s.startswith(f"petsc@={version} ") for s in petscs), (site, petscs)
        assert all(f"py-petsc4py@={version}" in s for s in e["specs"] if s.startswith("py-petsc4py")), site
        views = set(e["view"])
        site_file = yaml.safe_load((ROOT / "site-configs" / f"{site}.yaml").read_text())
        for v in site_file["variants"]:  # every variant's PETSC_DIR is one of the environment's views
            assert Path(v["petsc_dir"]).name in views, (site, v["petsc_dir"], views)
        assert "mpi" in e["packages"] and e["packages"]["mpi"]["require"], site  # the machine's MPI, not a new one
        assert "bubblewrap" in e["specs"], site  # isolation where user namespaces are allowed


def test_the_overlay_adds_the_local_petsc_with_the_sdists_checksum():
    version = local_petsc_version()
    assert version in overlay_versions("petsc") and version in overlay_versions("py-petsc4py")
    sdist = ROOT / ".venv" / "hpcbench-cache" / f"petsc-{version}.tar.gz"
    if not sdist.is_file():
        pytest.skip(f"{sdist} is not here (scripts/setup.sh keeps it): checksum NOT compared")
    assert hashlib.sha256(sdist.read_bytes()).hexdigest() == overlay_versions("petsc")[version]


@needs_recipes
@pytest.mark.parametrize("site", SITES)
def test_environment_specs_hold_against_the_recipes(site):
    reader = RecipeReader(recipes_root())  # type: ignore[arg-type]
    problems = problems_of(reader, env(site))
    assert not problems, f"spack/{site}/spack.yaml against spack-packages:\n  " + "\n  ".join(problems)


@needs_recipes
@pytest.mark.parametrize("planted,expect", [
    ("petsc@=3.26.1 +mpi +nosuchvariant", "no variant 'nosuchvariant'"),
    ("petsc@=3.26.1 +mpi +sycl ~kokkos", "+sycl requires +kokkos"),
    ("petsc@=3.26.1 ~mpi +hypre", "Requires +mpi"),
    ("petsc@=3.26.1 +cuda cuda_arch=7", "cuda_arch=7 is not one of"),
    ("petsc@=3.99.0 +mpi", "no such version"),
    ("kokkos +cuda +rocm amdgpu_target=gfx90a cuda_arch=80", "CUDA and ROCm are not compatible"),
])
def test_a_planted_defect_is_caught(planted, expect):
    """The check fails where a spec names a variant the recipe lacks or breaks one of its conflicts."""
    reader = RecipeReader(recipes_root())  # type: ignore[arg-type]
    e = {**env("polaris"), "specs": [planted]}
    problems = problems_of(reader, e)
    assert any(expect in p for p in problems), problems


@needs_recipes
def test_the_recipes_are_the_pinned_commit():
    commit = recipes_root().parent / "COMMIT"  # type: ignore[union-attr]
    if not commit.is_file():
        pytest.skip("no COMMIT file beside the recipes: their commit is not known")
    assert commit.read_text().strip() == PINNED_COMMIT
