"""`doctor --site`'s checks of what only the machine shows (hpcbench/doctor_machine.py; docs/sites.md
doctor-gtl, doctor-ncpus, doctor-inherited-env).

Real where it runs here: the venv's PETSc (its petscvariables and `ldd libpetsc.so`), a shared
library built here that needs a GTL library (ldd resolves it), this process's cpuset. Stand-ins
only for what cannot be had here, each said where it is used: Cray MPICH's GTL (a
petscvariables line naming it, an empty library of its name), a PBS job's environment (as
OpenPBS's MoM sets it: tests/clusters.py mom_env), and a Cray login environment (its variables)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from hpcbench.doctor import doctor
from hpcbench.doctor_machine import gtl_link_check, inherited_env_check, ncpus_check
from hpcbench.petsc_env import PetscInstall, find_petsc
from hpcbench.site import SiteConfig, VariantConfig, load_site
from tests.clusters import mom_env

SITES = ("polaris", "aurora", "frontier", "perlmutter")
# A Cray login environment as each site's documentation says it starts (docs/sites.md: gtl,
# perlmutter-cpu-env); stand-ins for `module list` there. Perlmutter's with GPU-aware MPI on too:
# its script must be safe either way.
LOGIN_DEFAULTS = {
    "polaris": {"CRAY_ACCEL_TARGET": "nvidia80", "LOADEDMODULES": "craype/2.7.35:craype-accel-nvidia80"},
    "perlmutter": {"CRAY_ACCEL_TARGET": "nvidia80", "MPICH_GPU_SUPPORT_ENABLED": "1",
                   "LOADEDMODULES": "gpu/1.0:craype-accel-nvidia80:cray-mpich/8.1.30"},
    "frontier": {"LOADEDMODULES": "craype/2.7.33:cray-mpich/8.1.31"},
    "aurora": {"LOADEDMODULES": "oneapi/release/2025.3.1:mpich/opt/4.3.1"},
}


def stand_in_install(tmp: Path, lib_basic: str) -> PetscInstall:
    """A prefix install whose petscvariables has this link line (stand-in: no Cray PETSc here)."""
    conf = tmp / "lib" / "petsc" / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "petscvariables").write_text(f"PETSC_EXTERNAL_LIB_BASIC = {lib_basic}\n")
    return PetscInstall(petsc_dir=tmp, petsc_arch="", version="3.26.1")


def gpu_variants(site: SiteConfig) -> list[VariantConfig]:
    return [v for v in site.variants if v.is_gpu()]


def gtl_findings(site: SiteConfig, tmp: Path) -> list[str]:
    """[doctor-gtl] for every variant of a site: a GPU variant that switches on GPU-aware MPI fails
    on a link line without the GTL and passes with its own; other variants are not asked."""
    bad = []
    for v in site.variants:
        feats = set(v.provides) | {f for f in ("cuda", "hip", "sycl") if any(f in c for c in v.claims)}
        if site.name == "frontier" and v.is_gpu():
            feats |= {"hip"}  # Kokkos on HIP (claims say kokkos only)
        plain = stand_in_install(tmp / v.name / "plain", "-lpetsc -lm")
        if not any("MPICH_GPU_SUPPORT_ENABLED=1" in ln for ln in site.setup_for(v.name)):
            if gtl_link_check(site, v.name, plain, feats)[0] != "n/a":
                bad.append(f"{v.name}: checked though its jobs do not switch on GPU-aware MPI")
            continue
        lib = {"cuda": "cuda", "hip": "hsa"}.get(next((f for f in ("cuda", "hip") if f in feats), ""), "cuda")
        withgtl = stand_in_install(tmp / v.name / "gtl", f"-L/opt/cray/pe/mpich/9.0.1/gtl/lib -lmpi_gtl_{lib} -lm")
        if gtl_link_check(site, v.name, plain, feats)[0] != "FAILED":
            bad.append(f"{v.name}: a link line without the GTL passes")
        if gtl_link_check(site, v.name, withgtl, feats)[0] != "ok":
            bad.append(f"{v.name}: its own GTL (libmpi_gtl_{lib}) does not pass")
    return bad


def ncpus_findings(site: SiteConfig, tmp: Path) -> list[str]:
    """[doctor-ncpus] inside a PBS job of the site's own select: NCPUS=1 is a warning naming
    pbs-whole-node-cores, a cpuset of one CPU a failure, a whole node ok; outside a job not run."""
    if site.scheduler != "pbs":
        return [] if ncpus_check(site, {})[0] == "n/a" else ["checked on a site that is not PBS"]
    part = site.partition_for(site.variants[0].name)
    assert part is not None
    script = tmp / "job.pbs"
    script.write_text(f"#!/bin/bash\n#PBS -l select=1:system={site.name}\n")  # ALCF's select: no ncpus
    env = {**mom_env(script, tmp, "1"), "PBS_JOBID": "1.pbs", "PBS_QUEUE": part.name}
    whole = (part.cores_per_node + len(part.reserved_cores)) * part.threads_per_core
    bad = []
    got = ncpus_check(site, env, cpus=range(whole))
    if got[0] != "WARNING" or "NCPUS=1" not in got[1] or "pbs-whole-node-cores" not in got[1]:
        bad.append(f"NCPUS=1 in a whole-node job: {got}")
    if ncpus_check(site, env, cpus={1})[0] != "FAILED":
        bad.append("a one-CPU cpuset passes")
    if ncpus_check(site, {**env, "NCPUS": str(whole)}, cpus=range(whole))[0] != "ok":
        bad.append("a whole node with NCPUS of its threads does not pass")
    if ncpus_check(site, {})[0] != "not run":
        bad.append("outside a PBS job it is not 'not run'")
    return bad


def inherited_env_findings(site: SiteConfig) -> list[str]:
    """[doctor-inherited-env] from the site's documented login defaults, every CPU variant's jobs
    are clean (its lines unload/unset what is there)."""
    return [f"{name}: {status}: {detail}" for name, (status, detail, _) in
            inherited_env_check(site, LOGIN_DEFAULTS[site.name]) if status != "ok"]


@pytest.mark.parametrize("site", SITES)
def test_each_site_passes_the_machine_checks_with_stand_ins(site, tmp_path):
    s = load_site(site)
    assert gtl_findings(s, tmp_path) == []
    assert ncpus_findings(s, tmp_path) == []
    assert inherited_env_findings(s) == []


def test_the_venvs_petsc_has_no_gtl_and_a_gpu_aware_variant_on_it_fails(tmp_path):
    """Real: the venv's PETSc (petscvariables, then ldd of libpetsc) links no GTL; doctor() reports
    the variant that would switch GPU-aware MPI on over it, and leaves a CPU variant alone."""
    inst = find_petsc()
    site = SiteConfig(name="t", variants=[
        VariantConfig(name="cpu", petsc_dir=str(inst.petsc_dir), petsc_arch=inst.petsc_arch),
        VariantConfig(name="gpu", petsc_dir=str(inst.petsc_dir), petsc_arch=inst.petsc_arch, provides=["cuda"],
                      env={"MPICH_GPU_SUPPORT_ENABLED": "1"})])
    rep = doctor(site, None, run_launcher=False)
    rows = {what.strip(): (status, detail) for what, status, detail in rep.rows}
    assert rows["GTL [gpu]"][0] == "FAILED" and "GTL library is not linked" in rows["GTL [gpu]"][1]
    assert rows["GTL [cpu]"][0] == "n/a"
    assert "NCPUS (PBS job)" in rows and rows["NCPUS (PBS job)"][0] == "n/a"  # a local site
    assert rows["inherited env [cpu]"][0] in ("ok", "WARNING", "FAILED")  # whatever this shell has


@pytest.mark.skipif(not (shutil.which("cc") and shutil.which("ldd")), reason="no C compiler or ldd here: NOT RUN")
def test_a_libpetsc_that_needs_the_gtl_passes_through_ldd(tmp_path):
    """The GTL reached through libpetsc.so's own dependencies (a PETSc linked with the cc wrapper
    and craype-accel loaded records it there, not in PETSC_EXTERNAL_LIB_BASIC). The GTL is a
    stand-in (an empty library of its name: Cray MPICH is not here); the link and ldd are real."""
    gtl = tmp_path / "gtl"
    lib = tmp_path / "lib"
    gtl.mkdir()
    lib.mkdir()
    (tmp_path / "e.c").write_text("int gtl_stand_in(void) { return 0; }\n")
    (tmp_path / "p.c").write_text("int gtl_stand_in(void);\nint petsc_stand_in(void) { return gtl_stand_in(); }\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(gtl / "libmpi_gtl_hsa.so"), str(tmp_path / "e.c")],
                   check=True)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib / "libpetsc.so"), str(tmp_path / "p.c"),
                    f"-L{gtl}", f"-Wl,-rpath,{gtl}", "-lmpi_gtl_hsa"], check=True)
    conf = lib / "petsc" / "conf"
    conf.mkdir(parents=True)
    (conf / "petscvariables").write_text("PETSC_EXTERNAL_LIB_BASIC = -lm\n")
    inst = PetscInstall(petsc_dir=tmp_path, petsc_arch="", version="3.26.1")
    site = load_site("frontier")
    status, detail, _ = gtl_link_check(site, "kokkos", inst, {"hip", "kokkos"})
    assert (status, "libmpi_gtl_hsa") == ("ok", detail.split()[0]) and "ldd libpetsc.so" in detail
    status, detail, _ = gtl_link_check(load_site("perlmutter"), "cuda", inst, {"cuda"})
    assert status == "WRONG" and "libmpi_gtl_cuda" in detail  # HIP's GTL under a CUDA variant


def test_the_ncpus_check_reads_this_processs_cpuset_by_default():
    site = load_site("polaris")
    status, detail, _ = ncpus_check(site, {"PBS_JOBID": "1.pbs", "NCPUS": "64", "PBS_QUEUE": "debug"})
    assert f"{len(os.sched_getaffinity(0))} CPUs" in detail
    layout = site.partition_for("cpu").layout()
    assert status == ("ok" if set(layout.cpus(range(len(layout.cores)))) <= os.sched_getaffinity(0) else "FAILED")


@pytest.mark.parametrize("site_name", ["polaris", "aurora"])
def test_doctor_and_the_pack_driver_apply_one_whole_node_rule(site_name, tmp_path):
    """doctor-ncpus and pbs-whole-node-cores are one rule (jobs/cores.whole_node_findings): for each
    NCPUS and cpuset a job may get, the driver warns exactly where doctor does not say ok, and of
    the same thing."""
    from hpcbench.jobs.pack import PackManifest, node_warnings

    site = load_site(site_name)
    part = site.partition_for("cpu")
    whole = part.hardware_threads
    m = PackManifest(scheduler="pbs", variant="cpu", specs=[], cores_per_node=part.cores_per_node,
                     work_dir=str(tmp_path), summary=str(tmp_path / "s.json"), layout=part.layout(),
                     whole_nodes=True, node_threads=whole)
    for ncpus in ("1", str(whole), ""):
        for cpus in (set(range(whole)), {0, 1}):
            status, detail, _ = ncpus_check(site, {"PBS_JOBID": "1.pbs", "NCPUS": ncpus}, cpus=cpus)
            warned = node_warnings(m, ncpus, cpus)
            assert (status == "ok") == (not warned), (ncpus, len(cpus), status, warned)
            if status == "FAILED":  # the cpuset finding, word for word
                assert any("affinity" in w and w in detail for w in warned), (detail, warned)
            elif status == "WARNING":  # the NCPUS one, and only it
                assert len(warned) == 1 and warned[0] in detail, (detail, warned)


def test_gpu_aware_mpi_inherited_by_a_cpu_variant_that_keeps_it_fails():
    """Frontier's CPU variant unloads nothing: GPU-aware MPI left in the login environment fails,
    an accelerator module alone warns; Perlmutter's unsets both."""
    env = {"MPICH_GPU_SUPPORT_ENABLED": "1", "CRAY_ACCEL_TARGET": "amd_gfx90a",
           "LOADEDMODULES": "craype-accel-amd-gfx90a"}
    (name, (status, detail, required)), = inherited_env_check(load_site("frontier"), env)
    assert (name, status, required) == ("cpu", "FAILED", True) and "MPICH_GPU_SUPPORT_ENABLED=1" in detail
    (_, (status, detail, _)), = inherited_env_check(load_site("frontier"), {"CRAY_ACCEL_TARGET": "amd_gfx90a"})
    assert status == "WARNING" and "CRAY_ACCEL_TARGET=amd_gfx90a" in detail
    (_, (status, _, _)), = inherited_env_check(load_site("perlmutter"), {**env, "CRAY_ACCEL_TARGET": "nvidia80"})
    assert status == "ok"
