"""`hpcbench problems` (the bundled set and what this PETSc supports), `hpcbench
validate-checks` (mutation testing of the hidden checks) and `hpcbench validate-performance`
(of the performance metric)."""

from __future__ import annotations

import sys
from pathlib import Path

import click


@click.command()
@click.option("--contamination", is_flag=True,
              help="also each reference's nearest file among PETSc's tutorials and tests and its similarity")
@click.option("--petsc-src", type=click.Path(exists=True),
              help="PETSc source tree or release tarball to compare against (default: $PETSC_DIR when it is a "
                   "source tree, else the sdist scripts/setup.sh keeps)")
def problems(contamination: bool, petsc_src: str | None) -> None:
    """List the bundled problems and whether this PETSc supports them."""
    from hpcbench.plan import choose_variant, resolve_installs
    from hpcbench.problem import load_problems
    from hpcbench.site import load_site

    site = load_site("local")
    installs = resolve_installs(site)
    bundles = load_problems()
    near = _contamination(bundles, petsc_src) if contamination else {}
    for pid, b in bundles.items():
        got = choose_variant(b, site, installs)
        state = "ok" if not isinstance(got, str) else f"skipped: {got}"
        p = b.problem
        line = f"{pid:26s} {p.difficulty:6s} {'+'.join(p.modules):22s} {state}"
        if pid in near:
            line += "\n" + " " * 4 + near[pid]
        click.echo(line)
    if contamination:
        from hpcbench.contamination import THRESHOLD, K

        click.echo(f"similarity: share of the reference's token {K}-grams (names, numbers, strings abstracted) found "
                   f"in the nearest file; flagged at {THRESHOLD} or above")


def _contamination(bundles: dict, petsc_src: str | None) -> dict[str, str]:
    """Each problem's reference against PETSc's tutorials and tests: one line per problem."""
    from hpcbench.contamination import default_source, folder_sources, open_index, program_match
    from hpcbench.petsc_env import find_petsc

    petsc = find_petsc()
    source = Path(petsc_src) if petsc_src else default_source(petsc.petsc_dir, petsc.version)
    click.echo(f"comparing with the tutorials and tests of {source} (PETSc {petsc.version})", err=True)
    index = open_index(source, petsc.version)
    out = {}
    for pid, b in bundles.items():
        sources = folder_sources(b.reference_dir) if b.reference_dir.is_dir() else {}
        if not sources:
            out[pid] = "nearest PETSc example: - (no reference program)"
            continue
        m = program_match(index, sources)
        flag = "  NEAR-COPY" if m.flagged else ""
        out[pid] = f"nearest PETSc example: {m.file or '-'}  similarity {m.similarity:.3f}{flag}"
    return out


def validation_options(default_out: str, library: str):
    """The options both validators take: which problems and programs, the work folder, the reports."""
    opts = [
        click.option("--problems", "problem_ids",
                     help=f"comma-separated problem ids (default: every problem with a {library} library)"),
        click.option("--only", help="comma-separated program names: run just these"),
        click.option("--out", type=click.Path(file_okay=False), default=default_out, show_default=True,
                     help="work folder (reruns reuse finished jobs)"),
        click.option("--markdown", "md_file", type=click.Path(dir_okay=False), help="also write a table per problem"),
        click.option("--json", "json_file", type=click.Path(dir_okay=False),
                     help="also write every outcome as JSON"),
    ]

    def wrap(f):
        for opt in reversed(opts):
            f = opt(f)
        return f
    return wrap


def _names(only: str | None) -> frozenset[str] | None:
    return frozenset(n.strip() for n in only.split(",") if n.strip()) if only else None


def _report(reports: list, md_file: str | None, json_file: str | None) -> None:
    """The summary printed, the markdown and JSON written; exit 1 when a problem misses its targets."""
    import json

    from hpcbench.validation import as_json, markdown, summary

    click.echo(summary(reports))
    if md_file:
        Path(md_file).write_text(markdown(reports))
    if json_file:
        Path(json_file).write_text(json.dumps(as_json(reports), indent=1))
    sys.exit(0 if all(r.meets_targets for r in reports) else 1)


@click.command("validate-checks")
@validation_options("./validate-checks", "mutants/mutants.json")
@click.option("--retry-time-factor", type=float, default=4.0, show_default=True,
              help="rerun jobs with a run that timed out while it waited for a CPU once with time limits this "
                   "many times longer (1: never)")
@click.option("--generated", help="generated mutants per problem: a seeded sample of this many (default 40), "
              "'all' for every one, 0 for none")
@click.option("--seed", type=int, default=0, show_default=True, help="which sample of generated mutants")
@click.option("--library/--no-library", default=True, show_default=True,
              help="run the hand-written wrong programs and valid variants (mutants/mutants.json)")
@click.option("--screen/--no-screen", default=True, show_default=True,
              help="run wrong programs and generated mutants on a cheap part of the cases first and not in full "
              "where that decides them (their accuracy is then an upper bound)")
@click.option("--parallel", type=click.IntRange(1, 16), default=2, show_default=True,
              help="problems run at once, each in a process of its own (their runs share the cores)")
@click.option("--held-out-draws", type=click.IntRange(1, 8), default=None,
              help="held-out seeds the library runs at, each a stratified draw (default 2): a valid variant must "
                   "pass every check at every one")
@click.option("--language", type=click.Choice(["c", "python"]), default="c", show_default=True,
              help="whose library: c (mutants/mutants.json) or python (mutants/mutants-python.json, edits of "
                   "reference-python/, run as Python submissions in OUT/python; no generated mutants)")
def validate_checks(problem_ids, only, out, md_file, json_file, retry_time_factor, generated, seed,
                    library, screen, parallel, held_out_draws, language) -> None:
    """Measure the hidden checks by mutation testing: per problem the kill rate of wrong
    programs (accuracy < 0.5 or a gate stops them) and the acceptance rate of valid variants
    (every hidden check passed), then generated mutants of the reference (broken, equivalent,
    killed, surviving); exit 1 when a problem misses kill >= 95% (library and generated) or
    acceptance 100%."""
    from hpcbench.cli.progress import JOBS, Display
    from hpcbench.problem import parse_ids
    from hpcbench.validation import checks as vc

    if generated is not None and generated != "all" and not generated.isdigit():
        raise click.BadParameter(f"{generated!r}: a count or 'all'", param_hint="--generated")
    if language == "python" and generated not in (None, "0"):
        raise click.BadParameter("generated mutants are edits of the C references: none with --language python",
                                 param_hint="--generated")
    default = 0 if language == "python" else vc.GENERATED_PER_PROBLEM
    count = default if generated is None else None if generated == "all" else int(generated)
    options = vc.Options(only=_names(only), generated=count, seed=seed, library=library, screen=screen,
                         parallel=parallel, retry_starved=retry_time_factor, held_out_draws=held_out_draws,
                         language=language)
    with Display(JOBS) as progress:
        reports = vc.validate_checks(parse_ids(problem_ids), Path(out), options, progress)
    _report(reports, md_file, json_file)


@click.command("validate-performance")
@validation_options("./validate-performance", "mutants/perf.json")
@click.option("--time-factor", type=float, default=4.0, show_default=True,
              help="the ordinary cases' time limits this many times longer (a loaded machine's two-rank runs); "
                   "the performance case keeps its own")
def validate_performance(problem_ids, only, out, md_file, json_file, time_factor) -> None:
    """Measure the performance metric by mutation testing: per problem the kill rate of right
    but slower programs (execution_time < 0.95 x the reference's) and the acceptance rate of
    programs as fast as the reference (>= that); faster programs must outscore every program
    1.5x or more slower, and the problem's par must score 1; exit 1 when a problem misses kill
    >= 95%, acceptance 100%, or either of those."""
    from hpcbench.cli.progress import JOBS, Display
    from hpcbench.problem import parse_ids
    from hpcbench.validation import performance as vp

    with Display(JOBS) as progress:
        reports = vp.validate_performance(parse_ids(problem_ids), Path(out), _names(only), progress=progress,
                                          time_factor=time_factor)
    _report(reports, md_file, json_file)


def register(main: click.Group) -> None:
    main.add_command(problems)
    main.add_command(validate_checks)
    main.add_command(validate_performance)
