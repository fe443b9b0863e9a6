"""A site's PETSc variants as installs: looked at where they exist, else as the
site declares them (planning a cluster's campaign on a laptop for a dry run)."""

from __future__ import annotations

from pathlib import Path

from hpcbench.petsc_env import PetscInstall
from hpcbench.plan.campaign import resolve_variant
from hpcbench.site import SiteConfig

# In every full PETSc build: what a declared variant provides without saying so.
ALWAYS_BUILT = frozenset({"tao", "ts", "dmplex", "dmstag", "petscfe"})
# configure flag -> feature, for the accelerator back ends problems ask for
FLAG_FEATURES = (("cuda", "--with-cuda"), ("kokkos", "--with-kokkos"), ("hip", "--with-hip"))


def resolve_installs(site: SiteConfig) -> dict[str, PetscInstall | Exception]:
    """Each variant's install, or the FileNotFoundError that says why it is not here."""
    out: dict[str, PetscInstall | Exception] = {}
    for v in site.variants:
        try:
            out[v.name] = resolve_variant(v)
        except FileNotFoundError as e:
            out[v.name] = e
    return out


def declared_installs(site: SiteConfig) -> dict[str, PetscInstall]:
    """What a site says its PETSc variants are, for planning where they cannot be looked at.
    Checked for real by `doctor --site` there."""
    out = {}
    for v, got in zip(site.variants, resolve_installs(site).values(), strict=True):
        if isinstance(got, PetscInstall):
            out[v.name] = got
            continue
        feats = ALWAYS_BUILT | set(v.provides)
        feats |= {f for f, flag in FLAG_FEATURES if any(c.startswith(flag) for c in v.claims)}
        out[v.name] = PetscInstall(petsc_dir=Path(v.petsc_dir), petsc_arch=v.petsc_arch, version="",
                                   configure_options=" ".join(v.claims), features=frozenset(feats))
    return out
