"""Campaign profiles: everything that makes one campaign differ from another on the same site
with the same programs, in one typed, recorded object.

A campaign of `hpcbench run` measures memory safety under valgrind and times every case
three times; a test only asserting that a compile error is reported needs neither;
validate-checks reads only the instrumented run's answers, runs each problem's cheapest case
first, and retries a run that timed out while it waited for a CPU. Each of those used to be a
side door (a flag of the planner, a site rewritten in memory, a spec edited after planning, an
environment variable). Now they are fields of a `CampaignProfile`, written into campaign.json
by planning (`Manifest.profile`) and shown by `hpcbench explain C /profile`; the planner, the
executors and the pipeline read them from there and from nowhere else.

Named profiles (`PROFILES`): `full` (run, submit), `quick` (tests and screening: no valgrind,
no -malloc_debug, one timing run, no performance case), and those validation, calibration and
sweeps use. A YAML or JSON file with the same fields is a profile too (`load_profile`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import Field, ValidationError

from hpcbench.errors import ConfigError, format_validation_error
from hpcbench.strict import FrozenStrict

# Which of a problem's cases a campaign runs (plan/cases.py applies it, and the snapshot holds
# the problem as run): every published case at every rank count; each at its smallest rank
# count, no held-out or performance case (`one-rank`: validate-checks' screen of its library);
# the problem's cheapest case alone at one rank count (`cheapest`: the generated mutants'
# screen); every case at its smallest rank count and the first parallel case also at its
# largest, held-out cases kept (`one-rank-count`: generated mutants in full).
Cases = Literal["all", "one-rank", "cheapest", "one-rank-count"]

# On a machine without a scheduler other work shares the cores. Open MPI's ranks busy-poll
# while they wait for a message; when the partner rank has been descheduled the waiter burns
# the core the partner needs, and every message costs whole scheduler time slices: measured
# under a load of 6 on 2 cores, the reference advection1d ran at 2 ranks at efficiency 0.35
# busy-polling, 0.6 yielding. Yielding costs nothing when the machine is otherwise idle.
LOCAL_MPI_ENV = {"OMPI_MCA_mpi_yield_when_idle": "1"}


class CampaignProfile(FrozenStrict):
    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")]
    description: str = ""
    # valgrind: a run under memcheck for every program (where the site has valgrind), none, or
    # only for programs that passed every gate and hidden check, added after scoring (their
    # finished runs kept: jobs/resume.py) before the campaign is scored again
    valgrind: Literal["every", "passing", "off"] = "every"
    # which case valgrind runs: one drawn at planning among the cheap ones (a program cannot know
    # which, so it cannot leak only elsewhere), or the cheapest (validate-checks' generated
    # mutants are not adversaries: the drawn case cost robertson 19 s a run, the cheapest 5 s)
    valgrind_case: Literal["drawn", "cheapest"] = "drawn"
    malloc_debug: bool = True  # -malloc_debug in the instrumented run (where the site allows it)
    timing_repeats: Annotated[int, Field(ge=0, le=100)] | None = None  # None: the site's; 0: none
    # the performance case: timed beside the reference, the reference timed against a second
    # copy of itself (validate-performance's control), or not run
    performance: Literal["timed", "against-itself", "off"] = "timed"
    held_out: bool = True
    held_out_seed: Annotated[int, Field(ge=0, le=2**31 - 1)] | None = None  # None: drawn at random once
    # seeds drawn per problem (held_out_seed, +1, ...; plan/held_out.draw): validate-checks runs its
    # library at several, so a valid variant is measured across the ranges (issue 35)
    held_out_draws: Annotated[int, Field(ge=1, le=8)] = 1
    # the first this many of each problem's drawn cases (None: all of them). A stratified draw
    # deals its strata in an order shuffled per seed, so one case is a random stratum: the quick
    # profile's screen of wrong answers away from the published cases, not the coverage of both
    # ends of every range that `full` and validation keep (issue 35)
    held_out_cases: Annotated[int, Field(ge=1, le=64)] | None = None
    cases: Cases = "all"
    time_limit_factor: Annotated[float, Field(gt=0, le=100)] = 1.0  # the ordinary cases' limits, not the perf case's
    # A run stopped at its time limit while it waited for a CPU (load, not the program) makes
    # its job run once more with limits this many times longer (0: never)
    retry_starved: Annotated[float, Field(ge=0, le=100)] = 0.0
    # whether a time-out whose CPU waits were not measured (a batch site's probes) counts as held
    # back: validation wants every verdict sure; a user's campaign on exclusive batch nodes would
    # only pay a second allocation for a program that hangs
    retry_unmeasured: bool = True
    stop_at_failure: bool = False  # a job ends at its first failed run (the execution gate is failed anyway)
    # Locally, MPI ranks yield the core while they wait (Open MPI's mpi_yield_when_idle): under
    # a shared load a busy-polling 2-rank run took 8x its 1-rank twin. Nothing timed for a
    # score should run this way (the program could tell), so only untimed or sweep campaigns set it.
    yield_when_idle: bool = False
    # Core slots (local runs): this machine's ("machine": shared by every campaign running here
    # at once, so several side by side never oversubscribe the cores: jobs/cores.machine_slots),
    # this campaign's own ("campaign"), or the folder given
    core_slots: str = "machine"
    variants: list[str] | None = None  # the site's variants this campaign may use (None: all, in order)
    # the problems are snapshotted afresh at every plan (validation measures the checks as they
    # are now); otherwise a campaign keeps the problems as first planned
    resnapshot: bool = False
    # built binaries reused from the site's build cache (jobs/build_cache.py) when the sources,
    # PETSc and flags are the same; never on a site with isolation: none
    build_cache: bool = True

    def with_seed(self, seed: int | None) -> CampaignProfile:
        return self if seed is None else self.model_copy(update={"held_out_seed": seed})

    def summary(self) -> str:
        """One line, for progress and the report's provenance."""
        perf = {"timed": "performance case timed", "against-itself": "reference against itself",
                "off": "no performance case"}[self.performance]
        reps = "site's timing repeats" if self.timing_repeats is None else f"{self.timing_repeats} timing run(s)"
        held = ("no held-out cases" if not self.held_out else "held-out cases: every one drawn"
                if self.held_out_cases is None else f"held-out cases: the first {self.held_out_cases} drawn")
        return (f"profile {self.name}: valgrind {self.valgrind}, -malloc_debug {'on' if self.malloc_debug else 'off'}, "
                f"{reps}, {perf}, cases {self.cases}, {held}")


# run and submit retry a job whose run timed out while it waited for a CPU, with 4x limits: on
# a workstation at load 8-14 the references of allen-cahn-imex and darcy-dmplex timed out and
# their problems went unscored (outside review, issue 34); a program that had its CPU and still
# ran past its limit is not retried.
FULL = CampaignProfile(name="full", description="what run and submit measure: every instrument, the site's "
                                                  "timing repeats, the performance case, held-out cases",
                       retry_starved=4.0, retry_unmeasured=False)
# quick runs one held-out case per problem (a random stratum of the campaign's draw): enough to
# catch a program that prints the published answers; the suite's campaigns, which assert gates and
# checks, spent a third of their run time on the other two (test_held_out and validation keep them)
QUICK = CampaignProfile(name="quick", description="tests and screening: gates and hidden checks only (no valgrind, "
                                                    "no -malloc_debug, one timing run, no performance case, one "
                                                    "held-out case)",
                        valgrind="off", malloc_debug=False, timing_repeats=1, performance="off", held_out_cases=1)
# validate-checks: accuracy reads only the instrumented run; a job ends at its first failed run;
# one held-out draw for every campaign (the same command gives the same verdicts: two
# all-problem runs with fresh draws each lost a different library kill, docs/problems.md)
VALIDATION_SEED = 20261206
_CHECKS = dict(valgrind="off", malloc_debug=False, timing_repeats=0, performance="off", stop_at_failure=True,
               held_out_seed=VALIDATION_SEED, retry_starved=4.0, yield_when_idle=True, resnapshot=True)
# The library in full at two held-out seeds (6 stratified cases): a valid variant must meet every
# stated requirement wherever the ranges allow inputs (issue 35: stokes' schur-diag passed the
# published cases and broke the task's iteration bound at n 100-130), and a wrong program that is
# wrong only near one end of a range meets that end twice
LIBRARY_DRAWS = 2
CHECKS_LIBRARY = CampaignProfile(name="checks-library", description="validate-checks: the library in full, "
                                 f"held-out cases of {LIBRARY_DRAWS} seeds", **_CHECKS, held_out_draws=LIBRARY_DRAWS)
CHECKS_SCREEN = CampaignProfile(name="checks-screen", description="validate-checks: the library's wrong programs "
                                "at every case on one rank count", **{**_CHECKS, "cases": "one-rank"})
GENERATED_SCREEN = CampaignProfile(name="generated-screen", description="validate-checks: generated mutants at "
                                   "the cheapest case", **{**_CHECKS, "cases": "cheapest"})
GENERATED = CampaignProfile(name="generated", description="validate-checks: generated mutants in full; those that "
                            "pass every check get a valgrind run before their verdict",
                            **{**_CHECKS, "cases": "one-rank-count", "valgrind": "passing",
                               "valgrind_case": "cheapest"})
PERFORMANCE = CampaignProfile(name="validate-performance", description="validate-performance: every program "
                              "timed against the reference, the reference against itself",
                              valgrind="off", timing_repeats=1, performance="against-itself", time_limit_factor=4.0)
CALIBRATION = CampaignProfile(name="calibrate", description="judge calibration: what a judge reads (a build, the "
                              "runs, -log_view), nothing timed", valgrind="off", timing_repeats=0, held_out=False,
                              performance="off")
# A sweep's gating step (pipeline.gate_campaign): every gate's instrument, as `full` has them, and
# nothing timed (the sweep times what passes; the full profile's timing runs and performance
# case beside the reference were half of the step's time and read by nobody).
GATES = CampaignProfile(name="gates", description="a sweep's gating step: every gate's instrument (valgrind, "
                        "-malloc_debug, every case), nothing timed", timing_repeats=0, performance="off")
PROFILES = {p.name: p for p in (FULL, QUICK, CHECKS_LIBRARY, CHECKS_SCREEN, GENERATED_SCREEN, GENERATED,
                                PERFORMANCE, CALIBRATION, GATES)}


def sweep_profile(variant: str, repeats: int) -> CampaignProfile:
    """A scaling sweep: its cases are the sweep's sizes (no held-out draw), K timed repeats of
    each point on one variant, no valgrind (memory safety was a gate already); locally the
    ranks yield while they wait (hpcbench.sweep.run)."""
    return CampaignProfile(name="sweep", description="scaling sweep", valgrind="off", timing_repeats=repeats,
                           performance="off", held_out=False, variants=[variant], yield_when_idle=True)


def load_profile(given: str | Path) -> CampaignProfile:
    """A named profile, or a YAML/JSON file of CampaignProfile's fields; errors name the file and field."""
    if str(given) in PROFILES:
        return PROFILES[str(given)]
    path = Path(given)
    if not path.is_file():
        raise ConfigError("--profile", None, f"{given!r} is neither a profile ({', '.join(PROFILES)}) nor a file")
    try:
        data = yaml.safe_load(path.read_text()) if path.suffix in (".yaml", ".yml") else json.loads(path.read_text())
    except (OSError, ValueError, yaml.YAMLError) as e:
        raise ConfigError(path, None, f"unreadable ({str(e).splitlines()[0][:200]})") from None
    if not isinstance(data, dict):
        raise ConfigError(path, None, "a profile is a mapping of CampaignProfile's fields")
    try:
        return CampaignProfile.model_validate(data)
    except ValidationError as e:
        raise ConfigError(path, *format_validation_error(e)) from None
