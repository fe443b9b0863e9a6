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


def env_text(site: str) -> str:
    return (ROOT / "spack" / site / "spack.yaml").read_text()


def env(site: str) -> dict:
    return yaml.safe_load(env_text(site))["spack"]


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


def matching_external(e: dict, name: str, node: Node) -> Node | None:
    """Of a package's several externals (cray-mpich ~cuda and +cuda: one prefix, two specs), the
    one whose variants agree with those the spec asks."""
    for ext in ((e.get("packages") or {}).get(name) or {}).get("externals", []) or []:
        have = parse_spec(ext["spec"]).root
        if all(have.variants.get(k, v) == v for k, v in node.variants.items()):
            return have
    return None


def problems_of(reader: RecipeReader, e: dict) -> list[str]:
    known = known_of(e)
    out = []
    for spec_text in e["specs"]:
        spec = parse_spec(spec_text)
        nodes = {spec.root.name: spec.root, **{k: v for k, v in spec.deps.items() if k not in COMPILER_PACKAGES}}
        for name, node in nodes.items():
            have = matching_external(e, name, node) or known.node(name)
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


# ----------------------------------------------------------------------------- issue 37's findings
# Each `*_problems(site)` is one rule of docs/sites.md (tests/test_sites_conformance.py calls it for
# its rule row); they read the environment's text only, so they run where Spack's recipes are not
# here. The recipe tests further down check the facts they rest on against the pinned recipes.

GTL = {"cuda": "cuda_arch", "rocm": "amdgpu_target"}  # cray-mpich's gtl_lib: the GPU variant, its arch
GTL_ARCHS = {"cuda": {"70", "80", "90"}, "rocm": {"gfx906", "gfx908", "gfx90a", "gfx940", "gfx942"}}
# What PETSc +rocm, Kokkos +rocm and ROCmPackage depend on (hipblas-common only from hipblas 6.3)
ROCM_PACKAGES = ("hip", "hipblas", "hipsparse", "hipsolver", "rocsparse", "rocsolver", "rocblas", "rocrand",
                 "rocthrust", "rocprim", "rocm-core", "llvm-amdgpu", "hsa-rocr-dev")
# The externals' oldest acceptable versions, from the centres' pages (docs/sites.md, spack-versions);
# Perlmutter's are not here: NERSC's pages were not among the copies read.
MIN_EXTERNALS = {
    "polaris": {"cray-mpich": "9.0.1", "cuda": "12.9.1"},  # ALCF module lists after PE 25.09; CUDA 12.9.1
    "aurora": {"intel-oneapi-compilers": "2025.3.1"},  # ALCF's 2026 update: PE 26.26.0, oneAPI 2025.3.1
    "frontier": {"cray-mpich": "8.1.29", "hip": "6.0"},  # OLCF removed cray-mpich <= 8.1.28 and ROCm 5.x
}
LOGIN_BUILD_JOBS = 4  # ALCF: 8 cores and 128 tasks per user on a login node, "-j4" for builds


def _externals(e: dict, name: str) -> list[Node]:
    return [parse_spec(x["spec"]).root for x in ((e.get("packages") or {}).get(name) or {}).get("externals") or []]


def _petsc_of(spec_text: str) -> tuple[Node, dict[str, Node]] | None:
    """The PETSc a root builds (itself, or a py-petsc4py's ^petsc) and the other nodes it names."""
    spec = parse_spec(spec_text)
    if spec.root.name == "petsc":
        return spec.root, spec.deps
    if "petsc" in spec.deps:
        return spec.deps["petsc"], {k: v for k, v in spec.deps.items() if k != "petsc"}
    return None


def gtl_problems(site: str) -> list[str]:
    """[spack-gtl] A GPU PETSc on Cray MPICH depends on a `cray-mpich +cuda cuda_arch=A` (or
    `+rocm amdgpu_target=T`) external, so that cray-mpich's gtl_lib names the GTL; the overlay's
    petsc puts it on PETSc's link line; a CPU PETSc on the plain external."""
    e = env(site)
    if e["packages"]["mpi"]["require"] != ["cray-mpich"]:
        return []  # Aurora: MPICH, no GTL
    bad = []
    for text in e["specs"]:
        got = _petsc_of(text)
        if got is None:
            continue
        petsc, deps = got
        gpu = next((g for g in GTL if petsc.variants.get(g) == "true"), "")
        mpich = deps.get("cray-mpich")
        if not gpu:
            if mpich is not None and any(mpich.variants.get(g) == "true" for g in GTL):
                bad.append(f"{text}: a CPU PETSc on the GTL's cray-mpich")
            continue
        arch = petsc.variants.get(GTL[gpu], "")
        want = {gpu: "true", GTL[gpu]: arch}
        if mpich is None or any(mpich.variants.get(k) != v for k, v in want.items()):
            bad.append(f"{text}: not ^cray-mpich+{gpu} {GTL[gpu]}={arch} (its gtl_lib adds nothing)")
        elif not any(all(x.variants.get(k) == v for k, v in want.items()) for x in _externals(e, "cray-mpich")):
            bad.append(f"{text}: no cray-mpich external +{gpu} {GTL[gpu]}={arch}")
        elif arch not in GTL_ARCHS[gpu]:
            bad.append(f"{text}: cray-mpich's gtl_lib knows no GTL for {GTL[gpu]}={arch}")
    overlay = (OVERLAY / "petsc" / "package.py").read_text()
    if "def configure_options" not in overlay or "gtl_lib" not in overlay or '"LIBS="' not in overlay:
        bad.append("spack/repo's petsc does not add cray-mpich's gtl_lib to configure's LIBS")
    return bad


def oneapi_problems(site: str) -> list[str]:
    """[spack-oneapi] A SYCL PETSc is compiled by oneAPI (`%oneapi@V:` on the spec, V no newer than
    the external intel-oneapi-compilers): the recipe refuses SYCL unless the C++ compiler is icpx."""
    e = env(site)
    have = [x.version for x in _externals(e, "intel-oneapi-compilers")]
    bad = []
    for text in e["specs"]:
        got = _petsc_of(text)
        if got is None or got[0].variants.get("sycl") != "true":
            continue
        oneapi = got[1].get("oneapi")
        low = (oneapi.version if oneapi else "").split(":")[0]
        if oneapi is None or not low:
            bad.append(f"{text}: no %oneapi@<version>: (the petsc recipe requires icpx for +sycl)")
        elif not any(_vkey(v) >= _vkey(low) for v in have):
            bad.append(f"{text}: %oneapi@{oneapi.version} but the external intel-oneapi-compilers is {have}")
    return bad


def _vkey(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v))


def rocm_externals_problems(site: str) -> list[str]:
    """[spack-rocm-externals] Where a PETSc is +rocm, every ROCm package it (and Kokkos, and
    ROCmPackage) depends on is a non-buildable external at hip's version: nothing of ROCm is
    built from source."""
    e = env(site)
    if not any((p := _petsc_of(t)) and p[0].variants.get("rocm") == "true" for t in e["specs"]):
        return []
    hip = [x.version for x in _externals(e, "hip")]
    bad = []
    for name in ROCM_PACKAGES:
        cfg = (e.get("packages") or {}).get(name) or {}
        versions = [x.version for x in _externals(e, name)]
        if cfg.get("buildable", True) or not versions:
            bad.append(f"{name}: not a non-buildable external (Spack would build it from source)")
        elif versions != hip:
            bad.append(f"{name}@{versions} is not at hip's version {hip}")
    return bad


def versions_problems(site: str) -> list[str]:
    """[spack-versions] Externals no older than the centre's current programming environment, and
    the file says to rerun `spack external find` after a PE upgrade."""
    e = env(site)
    text = env_text(site)
    bad = [] if "spack external find" in text and "PE upgrade" in text else [
        "the header does not say to rerun `spack external find` after a PE upgrade"]
    for name, low in MIN_EXTERNALS.get(site, {}).items():
        for x in _externals(e, name):
            if _vkey(x.version) < _vkey(low):
                bad.append(f"external {name}@{x.version}: older than {low}, the centre's current one")
    return bad


def build_jobs_problems(site: str) -> list[str]:
    """[spack-build-jobs] `config: build_jobs` caps `spack install`'s parallel jobs on a login node."""
    jobs = (env(site).get("config") or {}).get("build_jobs")
    if not isinstance(jobs, int) or not 1 <= jobs <= LOGIN_BUILD_JOBS:
        return [f"config.build_jobs is {jobs!r}: at most {LOGIN_BUILD_JOBS} on a shared login node"]
    return []


def _same(a: Node, b: Node) -> bool:
    return a.version == b.version and a.variants == b.variants


def roots_problems(site: str) -> list[str]:
    """[spack-roots] One py-petsc4py per PETSc root, asking exactly that root's PETSc (every variant
    and dependency the root names): a looser `^petsc~cuda` is concretized on its own (unify: false)
    into another PETSc with the recipe's defaults."""
    e = env(site)
    roots = [parse_spec(t) for t in e["specs"] if parse_spec(t).root.name == "petsc"]
    bad = []
    matched = [0] * len(roots)
    for text in e["specs"]:
        spec = parse_spec(text)
        if spec.root.name != "py-petsc4py":
            continue
        petsc, others = spec.deps.get("petsc"), {k: v for k, v in spec.deps.items() if k != "petsc"}
        hits = [i for i, r in enumerate(roots) if petsc is not None and _same(petsc, r.root)
                and others.keys() == r.deps.keys() and all(_same(others[k], r.deps[k]) for k in others)]
        if not hits:
            bad.append(f"{text}: its PETSc is none of the PETSc roots: a PETSc built for it alone")
        for i in hits:
            matched[i] += 1
    bad += [f"PETSc root {i}: {n} py-petsc4py roots, not one" for i, n in enumerate(matched) if n != 1]
    return bad


FINDINGS = {"spack-gtl": gtl_problems, "spack-oneapi": oneapi_problems,
            "spack-rocm-externals": rocm_externals_problems, "spack-versions": versions_problems,
            "spack-build-jobs": build_jobs_problems, "spack-roots": roots_problems}


@pytest.mark.parametrize("site", SITES)
@pytest.mark.parametrize("rule", sorted(FINDINGS))
def test_environment_follows_issue_37_rules(rule, site):
    assert FINDINGS[rule](site) == [], (rule, site)


def _at_5379f62(site: str) -> str:
    """The environment as main 5379f62 had it (issue 37's review), from git."""
    import subprocess
    p = subprocess.run(["git", "show", f"5379f62:spack/{site}/spack.yaml"], cwd=ROOT, capture_output=True,
                       text=True)
    if p.returncode != 0:
        pytest.skip(f"commit 5379f62 is not in this clone: {p.stderr.strip()}")
    return p.stdout


@pytest.mark.parametrize("rule,site", [
    ("spack-gtl", "polaris"), ("spack-gtl", "frontier"), ("spack-gtl", "perlmutter"),
    ("spack-oneapi", "aurora"), ("spack-rocm-externals", "frontier"), ("spack-versions", "polaris"),
    ("spack-versions", "aurora"), ("spack-build-jobs", "polaris"), ("spack-roots", "frontier")])
def test_the_reviewed_environments_break_the_rules(rule, site, monkeypatch):
    """Each check fails on the environment issue 37's review read (main 5379f62)."""
    old = _at_5379f62(site)
    monkeypatch.setitem(globals(), "env_text", lambda s: old)
    assert FINDINGS[rule](site), (rule, site)


def test_a_gpu_petsc_on_the_plain_cray_mpich_breaks_spack_gtl(monkeypatch):
    e = env("polaris")
    e["specs"] = [s.replace(" ^cray-mpich+cuda cuda_arch=80", "") for s in e["specs"]]
    monkeypatch.setitem(globals(), "env", lambda s: e)
    assert any("not ^cray-mpich+cuda cuda_arch=80" in p for p in gtl_problems("polaris"))


# ----------------------------------------------------------------------------- the facts, from the recipes

def _recipe(pkg: str) -> str:
    return (recipes_root() / "spack_repo" / "builtin" / "packages" / pkg.replace("-", "_") /  # type: ignore[operator]
            "package.py").read_text()


@needs_recipes
def test_the_petsc_recipe_links_no_gtl_and_refuses_sycl_without_icpx():
    """The premises of spack-gtl and spack-oneapi: the builtin petsc configures with the MPI's own
    mpicc and never reads cray-mpich's gtl_lib (so the overlay must), and raises unless icpx
    compiles a +sycl build. If upstream changes either, this says so."""
    petsc = _recipe("petsc")
    assert 'self.spec["mpi"].mpicc' in petsc and "gtl" not in petsc.lower()
    assert 'sycl_compatible_compilers = ["icpx"]' in petsc


@needs_recipes
def test_cray_mpich_gtl_lib_knows_the_archs_and_names_the_libraries():
    text = _recipe("cray-mpich")
    assert '"lib": "libmpi_gtl_cuda"' in text and '"lib": "libmpi_gtl_hsa"' in text
    for gpu, archs in GTL_ARCHS.items():
        m = re.search(rf'"{gpu}": \{{\s*"lib": "[^"]+",\s*"variant": "{GTL[gpu]}",\s*"values": \{{([^}}]*)\}}', text)
        assert m, gpu
        assert set(re.findall(r'"([^"]+)"', m.group(1))) == archs


@needs_recipes
def test_rocm_packages_are_those_the_recipes_depend_on():
    """ROCM_PACKAGES holds every package petsc's `with when("+rocm")` block, its hip dependency,
    ROCmPackage's +rocm dependencies and Kokkos' rocthrust name (hipblas-common only from hipblas
    6.3, beyond Frontier's 6.2.4)."""
    petsc = ast.parse(_recipe("petsc"))
    names = set()
    for node in ast.walk(petsc):
        if isinstance(node, ast.With) and any(
                isinstance(i.context_expr, ast.Call) and getattr(i.context_expr.func, "id", "") == "when"
                and i.context_expr.args and getattr(i.context_expr.args[0], "value", "") == "+rocm"
                for i in node.items):
            names |= {c.args[0].value.split()[0] for c in ast.walk(node) if isinstance(c, ast.Call)  # type: ignore[attr-defined]
                      and getattr(c.func, "id", "") == "depends_on" and isinstance(c.args[0], ast.Constant)}
    rocm_py = (recipes_root() / "spack_repo" / "builtin" / "build_systems" / "rocm.py").read_text()  # type: ignore[operator]
    names |= {m.split()[0] for m in re.findall(r'depends_on\("([^"]+)",(?: type="build",)? when="\+rocm"\)', rocm_py)}
    assert 'depends_on("hip", when="+rocm")' in _recipe("petsc") and 'depends_on("rocthrust", when="@4.3: +rocm")' \
        in _recipe("kokkos")
    names |= {"hip", "rocthrust"}
    assert names - {"hipblas-common"} == set(ROCM_PACKAGES), sorted(names ^ set(ROCM_PACKAGES))
