"""Untrusted programs on a site without a sandbox: refused unless the user says otherwise.

A site with `isolation: none` runs every build and run with the user's own rights: a program
written by an agent could read the hidden checks and the other records, or rewrite them (a
cheat measured on the local site before the sandbox scored 100 GOLD). There, `run`, `submit`
and `sweep` accept only hpcbench's own reference programs unless `--trust-submissions` is given;
the report still warns that the campaign ran unisolated (docs/security.md, docs/sites.md)."""

from __future__ import annotations

from hpcbench.errors import HpcbenchError
from hpcbench.site import SiteConfig

# the bundled references, C and Python: hpcbench's own programs
TRUSTED_AGENTS = frozenset({"reference", "reference-python"})


def require_trust(site: SiteConfig, agents: list[str], submissions: str | None, trust: bool,
                  from_campaign: str | None = None) -> None:
    """Refuse agents' programs on an unisolated site without --trust-submissions."""
    if site.isolation != "none" or trust:
        return
    untrusted = [a for a in agents if a not in TRUSTED_AGENTS]
    if submissions:
        untrusted.append(f"--submissions {submissions}")
    if from_campaign:
        untrusted.append(f"--from {from_campaign}")
    if untrusted:
        raise HpcbenchError(
            f"site {site.name!r} has isolation: none, so agents' programs would run with your rights and could read "
            f"or change the hidden checks and other records ({', '.join(untrusted)}); give --trust-submissions to "
            "run them anyway (the report warns), or set up bwrap/apptainer for the site (`hpcbench doctor --site "
            f"{site.name}` says which works; docs/sites.md, isolation-site). Nothing was planned or submitted.")
