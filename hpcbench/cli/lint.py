"""`hpcbench lint FILE.c...`: the deterministic PETSc-convention checks on any C
file, outside a campaign, printed as a linter prints (`file:line:col: CODE
message`). Exit status: 0 clean, 1 findings, 2 usage error (missing file, not C).

The PetscErrorCode function list comes from the headers of the PETSc found by
hpcbench.petsc_env.find_petsc (--petsc-dir/--petsc-arch, else PETSC_DIR/PETSC_ARCH,
else the venv's); without one, PETSc calls are recognised by name prefix and a
note says so."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click


def _sources(files: tuple[str, ...]) -> list[Path]:
    """The files to lint: each file given, and a folder's source files (every suffix a
    submission may hold), or exit 2 naming the argument that is neither."""
    from hpcbench.submission import SOURCE_SUFFIXES

    out: list[Path] = []
    for f in files:
        p = Path(f)
        if p.is_dir():
            found = sorted(q for q in p.rglob("*") if q.is_file() and q.name.endswith(SOURCE_SUFFIXES))
            if not found:
                click.echo(f"hpcbench lint: error: {p}: a folder with no source file "
                           f"({', '.join(SOURCE_SUFFIXES)})", err=True)
                sys.exit(2)
            out.extend(found)
        elif not p.exists():
            click.echo(f"hpcbench lint: error: {p}: no such file or folder", err=True)
            sys.exit(2)
        elif not p.name.endswith(SOURCE_SUFFIXES):
            click.echo(f"hpcbench lint: error: {p}: not a source file (expected {', '.join(SOURCE_SUFFIXES)})",
                       err=True)
            sys.exit(2)
        else:
            out.append(p)
    return out


def _codes(spec: str | None) -> tuple[str, ...]:
    return tuple(s.strip().upper() for s in spec.split(",") if s.strip()) if spec else ()


@click.command()
@click.argument("files", nargs=-1, required=True)
@click.option("--petsc-dir", help="PETSc whose headers list the PetscErrorCode functions (default: PETSC_DIR)")
@click.option("--petsc-arch", help="PETSC_ARCH for --petsc-dir")
@click.option("--ranks", type=click.IntRange(min=1),
              help="rank count the program runs at: >1 turns on the ownership and PETSC_COMM_SELF checks")
@click.option("--select", help="only these codes or prefixes, e.g. HB1,HB301")
@click.option("--ignore", help="drop these codes or prefixes, e.g. HB302")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def lint(files, petsc_dir, petsc_arch, ranks, select, ignore, fmt) -> None:
    """Check C files for PETSc conventions: unchecked or legacy error checks
    (HB1xx), parallel mistakes (HB2xx), deprecated API and private headers (HB3xx), tampering
    with what measures the program (HB40x fail hpcbench's API-usage gate, HB45x notes), text
    addressed to an LLM judge (HB470)."""
    from hpcbench.evaluators.harness_tampering import scan_source as tampering
    from hpcbench.evaluators.injection_scan import injections_in_source
    from hpcbench.evaluators.petsc_conventions import (
        LintFinding,
        check_error_handling,
        check_parallel,
        check_public_api,
    )
    from hpcbench.petsc_headers import scan_install

    paths = _sources(files)
    try:
        api = scan_install(petsc_dir, petsc_arch)
        note = f"PetscErrorCode functions from PETSc {api.version} headers in {api.source}"
    except (FileNotFoundError, OSError) as e:
        api = None
        note = f"no PETSc headers ({e}); PETSc calls recognised by name prefix"
        click.echo(f"hpcbench lint: note: {note}", err=True)
    multi = None if ranks is None else ranks > 1
    sel, ign = _codes(select), _codes(ignore)
    findings = []
    for p in paths:
        try:
            src = p.read_text()
        except UnicodeDecodeError:
            click.echo(f"hpcbench lint: error: {p}: not UTF-8 text", err=True)
            sys.exit(2)
        if "\x00" in src:
            click.echo(f"hpcbench lint: error: {p}: binary (it holds NUL bytes), not C source", err=True)
            sys.exit(2)
        name = str(p)
        got = (check_error_handling(name, src, api).findings + check_parallel(name, src, multi).findings
               + check_public_api(name, src))
        got += list(tampering(name, src))
        got += [LintFinding(name, max(i.line, 1), 1, "HB470", f"text addressed to an LLM judge ({i.kind}"
                        + (f", {i.how}" if i.how else "") + f"): {i.rule}: \"{i.excerpt}\"")
                for i in injections_in_source(name, src)]
        findings += [f for f in got if (not sel or f.code.startswith(sel)) and not (ign and f.code.startswith(ign))]
    findings.sort(key=lambda f: (f.file, f.line, f.col, f.code))
    if fmt == "json":
        click.echo(json.dumps({"api": note, "findings": [f.__dict__ for f in findings]}, indent=1))
    else:
        for f in findings:
            click.echo(str(f))
        if findings:
            click.echo(f"{len(findings)} finding(s) in {len({f.file for f in findings})} of {len(paths)} file(s)",
                       err=True)
    sys.exit(1 if findings else 0)


def register(main: click.Group) -> None:
    main.add_command(lint)
