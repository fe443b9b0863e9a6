"""What hpcbench asks PETSc and valgrind to record in a run, and the check that each record
was made: the harness trusts only what it produced itself, so an instrument counts as having
run only when its own output is found where only the harness named it.

One probe per instrument; a run kind is a list of probes (jobs/job.py Runner):

    every run     -skip_petscrc: no petscrc, .petscrc or ~/.petscrc is read (PETSc 3.26
                  src/sys/objects/options.c PetscOptionsInsert: the flag is looked for in argv
                  before any of those files, PetscOptionsProcessPrecedentFlags)
    LogView       -log_view :<logs>/log_view.xml:ascii_xml,:<logs>/log_view.txt (timing, valgrind,
                  instrumented, perf): the XML tree of times and the text summary of counts
    Malloc        -malloc_debug -malloc_dump true -malloc_view <logs>/malloc_view -options_left
                  (instrumented; -malloc_debug unless the site turns it off, Site.malloc_debug)
    Valgrind      memcheck, one XML report per rank in <logs> (valgrind)
    SolverMonitor -ksp_monitor ascii:<logs>/ksp_monitor -ksp_view ascii:<logs>/ksp_view (every run
                  of a problem with a residual check, JobSpec.solver_monitor): the unprefixed
                  KSP's residual history and configuration. In every run kind alike, since the
                  view calls MatView and opens viewers, counts evaluators/watched_runs.py compares
    RawMalloc     the malloc recorder preloaded (jobs/raw_malloc.py), its record per rank in
                  <logs>/raw_malloc.<rank> (every run of a C program but valgrind's, which
                  sees malloc itself): blocks the program's own code took and never freed

Files the harness names in advance are created and held open by the driver (HeldFile): what is
read afterwards is the inode PETSc or valgrind wrote, and a name removed or replaced during the
run is a finding. PETSc's malloc dump cannot be named so (see MallocProbe) and is read from the
run folder without following links. Every read is capped."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Protocol, TypeVar

from hpcbench.jobs import ksp_monitor, raw_malloc
from hpcbench.jobs.log_summary import SUMMARY_MAX_BYTES, parse_log_summary
from hpcbench.jobs.logview import MAX_BYTES as LOG_VIEW_MAX_BYTES
from hpcbench.jobs.logview import parse_log_view, parse_options_left
from hpcbench.jobs.malloc_dump import parse_malloc_dump
from hpcbench.jobs.records import InstrumentCheck, KspSolves, RawMalloc, RunResult, ValgrindSummary
from hpcbench.jobs.run_folders import RunFolders
from hpcbench.jobs.untrusted_files import CappedReader, HeldFile, UnsafeFile, open_untrusted, read_capped
from hpcbench.jobs.valgrind import PYTHON_SUPPRESSIONS, read_report, report_name, valgrind_prefix

EVERY_RUN = ["-skip_petscrc"]
MALLOC_MAX_BYTES = 8 << 20
VALGRIND_MAX_BYTES = 64 << 20
NOT_FINALIZED = "the option was cleared or renamed (a prefix?), or PetscFinalize was not reached"
# Every run of the submission names the instruments in one options file of this name in its log
# folder, the same argv for all (`options_argv`): the program cannot tell the instrumented run
# from a timing or valgrind run by its argc or argv, and the files are of one size.
OPTIONS_FILE = "petsc-options"
OPTIONS_FILE_BYTES = 4096


def options_argv(options: list[str], logs: Path, logs_inside: Path) -> list[str]:
    """The argv that gives `options` (pairs and flags, as probes list them) to PETSc through the
    options file, written into `logs` now; the options themselves where a value holds a quote,
    which the file cannot carry (a campaign folder named so: then argc tells runs apart)."""
    if any('"' in a for a in options):
        return options
    lines, i = [], 0
    while i < len(options):  # "-name value" or "-name": a value is what does not start with '-'
        has_value = i + 1 < len(options) and not options[i + 1].startswith("-")
        lines.append(f'{options[i]} "{options[i + 1]}"' if has_value else options[i])
        i += 2 if has_value else 1
    text = "\n".join(lines) + "\n"
    n = len(text.encode())
    pad = max(OPTIONS_FILE_BYTES, -(-n // OPTIONS_FILE_BYTES) * OPTIONS_FILE_BYTES) - n
    while pad > 0:  # comment lines to the file's fixed size (each under PETSc's line length)
        line = "#" + "-" * (min(pad, 80) - 2) + "\n" if pad >= 2 else "\n"
        text += line
        pad -= len(line)
    (logs / OPTIONS_FILE).write_text(text)
    return ["-options_file", str(logs_inside / OPTIONS_FILE)]


class Probe:
    """One instrument; every hook has a default, a probe overrides what it needs."""

    name = ""

    def options(self, logs: Path) -> list[str]:
        """PETSc options this instrument adds, naming `logs` as the run sees it."""
        return []

    def prefix(self, logs: Path, petsc_dir: Path) -> list[str]:
        """What runs in front of the program (valgrind)."""
        return []

    def env(self, logs: Path, binary: Path) -> dict[str, str]:
        """Environment variables the run gets (the malloc recorder's preload)."""
        return {}

    def prepare(self, folders: RunFolders, ranks: int) -> None:
        """Before the run: create the files the instrument will write."""

    def collect(self, run: RunResult, folders: RunFolders) -> None:
        """After the run: read what it wrote into `run`, and add its InstrumentCheck."""


class _Parsed(Protocol):
    parse_error: str


T = TypeVar("T", bound=_Parsed)


def _held_problem(held: HeldFile, what: str) -> str:
    """Why a held output cannot be trusted or is empty ("" when it has content)."""
    return held.tampered() or ("" if held.size() else f"no {what} was written")


class LogViewProbe(Probe):
    """-log_view with two viewers (PETSc takes up to four, comma-separated: plog.c
    PetscLogViewFromOptions): the nested XML tree of times (jobs/logview.py) and the text
    summary with the objects by class and the calls by event (jobs/log_summary.py). One
    option, the same in every run, so no run can be told from another by it."""

    name = "log_view"
    FILE = "log_view.xml"
    SUMMARY = "log_view.txt"
    SUMMARY_CHECK = "log_summary"

    with_summary = True

    def options(self, logs: Path) -> list[str]:
        xml = f":{logs / self.FILE}:ascii_xml"
        # PETSc splits the value at commas: a log folder named with one gets the XML alone
        self.with_summary = "," not in str(logs)
        return ["-log_view", f"{xml},:{logs / self.SUMMARY}" if self.with_summary else xml]

    def prepare(self, folders: RunFolders, ranks: int) -> None:
        self.held = HeldFile.create(folders.logs, self.FILE)
        self.summary = HeldFile.create(folders.logs, self.SUMMARY)

    def collect(self, run: RunResult, folders: RunFolders) -> None:
        problem, run.log_view = _parse_held(self.held, f"-log_view report ({NOT_FINALIZED})",
                                            lambda b: parse_log_view(b, self.FILE), LOG_VIEW_MAX_BYTES)
        if self.with_summary:
            summary, run.log_counts = _parse_held(self.summary, f"-log_view text summary ({NOT_FINALIZED})",
                                                  lambda b: parse_log_summary(b, self.SUMMARY), SUMMARY_MAX_BYTES)
        else:
            self.summary.close()
            summary = "not asked for: PETSc would split the log folder's name at its comma"
        run.instruments += [InstrumentCheck(name=self.name, found=int(not problem), problem=problem),
                            InstrumentCheck(name=self.SUMMARY_CHECK, found=int(not summary), problem=summary)]


class SolverMonitorProbe(Probe):
    """The unprefixed KSP's residual history and its view (jobs/ksp_monitor.py). A program
    whose solvers all have prefixes, or with no KSP, leaves both empty: no record then, which is
    not a failed instrument (its residual check goes unscored, and says why)."""

    name = "ksp_monitor"
    MONITOR = "ksp_monitor"
    VIEW = "ksp_view"

    def options(self, logs: Path) -> list[str]:
        # a viewer's value is split at ':' (type:name:format); a log folder named with one gets none
        self.asked = ":" not in str(logs)
        if not self.asked:
            return []
        return ["-ksp_monitor", f"ascii:{logs / self.MONITOR}", "-ksp_view", f"ascii:{logs / self.VIEW}"]

    def prepare(self, folders: RunFolders, ranks: int) -> None:
        self.held = [HeldFile.create(folders.logs, n) for n in (self.MONITOR, self.VIEW)]

    def collect(self, run: RunResult, folders: RunFolders) -> None:
        try:
            problem = "" if self.asked else "not asked for: PETSc would split the log folder's name at its ':'"
            problem = problem or "; ".join(t for h in self.held if (t := h.tampered()))
            if not problem:
                run.ksp = ksp_monitor.parse_ksp(*(h.read(ksp_monitor.MAX_BYTES) for h in self.held))
        except UnsafeFile as e:
            problem = str(e)
        finally:
            for h in self.held:
                h.close()
        if problem:
            run.ksp = KspSolves(parse_error=problem)
        run.instruments.append(InstrumentCheck(name=self.name, found=int(not problem), problem=problem))


class RawMallocProbe(Probe):
    """The malloc recorder (jobs/raw_malloc.py): preloaded, its record of each rank in a file
    the driver made and holds. A rank that wrote none (the program did not exit normally, or
    took the preload out of its own environment) is a missing record."""

    name = "raw_malloc"

    def __init__(self, shim: Path | None, unbuilt: str = ""):
        self.shim, self.unbuilt = shim, unbuilt  # unbuilt: why there is no recorder (no C compiler)
        self.held: list[HeldFile] = []
        self.binary: Path | None = None  # the run's executable (env), whose debug info names call sites

    def env(self, logs: Path, binary: Path) -> dict[str, str]:
        self.binary = binary
        return raw_malloc.recorder_env(self.shim, binary, logs) if self.shim is not None else {}

    def prepare(self, folders: RunFolders, ranks: int) -> None:
        if self.shim is not None:
            self.held = [HeldFile.create(folders.logs, f"{raw_malloc.REPORT}.{r}") for r in range(ranks)]

    def collect(self, run: RunResult, folders: RunFolders) -> None:
        if self.shim is None:
            run.instruments.append(InstrumentCheck(name=self.name, found=0, problem=self.unbuilt or "not built"))
            return
        per_rank, problems = [], []
        try:
            for r, held in enumerate(self.held):
                why = _held_problem(held, f"malloc record for rank {r} (the process did not exit normally, or ran "
                                          "without the recorder)")
                got = RawMalloc(parse_error=why) if why else \
                    raw_malloc.parse_record(held.read(raw_malloc.MAX_BYTES), held.path.name)
                if got.parse_error:
                    problems.append(f"rank {r}: {got.parse_error}")
                else:
                    per_rank.append(got)
        except UnsafeFile as e:
            problems.append(str(e))
        finally:
            for held in self.held:
                held.close()
        rec = raw_malloc.merge_records(per_rank) if per_rank else RawMalloc()
        if rec.held_blocks and self.binary is not None:
            rec.callers = raw_malloc.source_lines(self.binary, rec.callers)
        rec.parse_error = "; ".join(problems)
        run.raw_malloc = rec
        run.instruments.append(InstrumentCheck(name=self.name, expected=len(self.held), found=len(per_rank),
                                               problem=rec.parse_error))


def _parse_held(held: HeldFile, what: str, parse: Callable[[bytes], T], cap: int) -> tuple[str, T | None]:
    """(why it cannot be used or "", what `parse` made of it): a held output read up to `cap`,
    closed either way; a parse error is the problem and nothing is kept."""
    try:
        if problem := _held_problem(held, what):
            return problem, None
        got = parse(held.read(cap))
        return (got.parse_error, None) if got.parse_error else ("", got)
    except UnsafeFile as e:
        return str(e), None
    finally:
        held.close()


# PETSc 3.26 reads -malloc_dump twice: as a bool at PetscInitialize (src/sys/objects/init.c:289,
# "the next line is deprecated": a file name there stops PetscInitialize with "Unknown logical
# value") and as a string at PetscFinalize (pinit.c:1706), writing PetscMallocDump into
# "<value>_<rank>" when it has one. "true" is both: the dump lands in `true_<rank>` in the
# program's working folder, never on stdout, which the program can close or redirect. It is
# empty when nothing leaked, so it cannot be made in advance (its appearing is the record).
DUMP_VALUE = "true"
# -malloc_view <file> (init.c:286, pinit.c:1724) writes PetscMallocView into "<file>_<rank>";
# its first line (src/sys/memory/mtr.c PetscMallocView) gives the most memory PETSc's tracing
# allocator held: above zero only when that allocator was in use.
_VIEW_HEAD = re.compile(rb"^\[(\d+)\] Maximum memory PetscMalloc\(\)ed (\d+)")


class MallocProbe(Probe):
    name = "malloc_dump"
    VIEW = "malloc_view"

    def __init__(self, debug: bool = True):
        self.debug = debug  # -malloc_debug: the whole heap validated at every allocation (Site.malloc_debug)

    def options(self, logs: Path) -> list[str]:
        # -options_left: PETSc prints the options nobody used (a prefixed -x_malloc_dump shows there).
        return [*(["-malloc_debug"] if self.debug else []), "-malloc_dump", DUMP_VALUE, "-malloc_view",
                str(logs / self.VIEW), "-options_left"]

    def prepare(self, folders: RunFolders, ranks: int) -> None:
        self.ranks = ranks
        self.views = [HeldFile.create(folders.logs, f"{self.VIEW}_{r}") for r in range(ranks)]

    def collect(self, run: RunResult, folders: RunFolders) -> None:
        try:
            run.instruments.append(self._view_check())
        finally:
            for held in self.views:
                held.close()
        dumps, problems = [], []
        for r in range(self.ranks):
            text, why = _read_dump(folders.run, r)
            dumps += [text] if not why else []
            problems += [f"rank {r}: {why}"] if why else []
        # Without its files (an older PETSc printing the dump, or a program that hid them) what
        # reached stdout still counts: a leak printed is a leak.
        run.leaks = parse_malloc_dump("\n".join(dumps)) if dumps else parse_malloc_dump(run.stderr, run.stdout)
        run.malloc_dump_seen = not problems
        run.options_left = parse_options_left(run.stdout)
        run.instruments.append(InstrumentCheck(name=self.name, expected=self.ranks, found=len(dumps),
                                               problem="; ".join(problems)))

    def _view_check(self) -> InstrumentCheck:
        problems = []
        for r, held in enumerate(self.views):
            why = _held_problem(held, f"-malloc_view record for rank {r} ({NOT_FINALIZED})")
            if not why:
                head = _VIEW_HEAD.match(held.head(256))  # the rest lists allocations by function
                if head is None or int(head.group(1)) != r:
                    why = f"{held.path.name} is not PETSc's -malloc_view record of rank {r}"
                elif int(head.group(2)) == 0:
                    why = f"rank {r}: PETSc's tracing allocator held no memory (it was switched off)"
            if why:
                problems.append(why)
        return InstrumentCheck(name="malloc_view", expected=self.ranks, found=self.ranks - len(problems),
                               problem="; ".join(problems))


def _read_dump(run_folder: Path, rank: int) -> tuple[str, str]:
    """(the malloc dump of `rank`, why it could not be read) from the run folder."""
    name = f"{DUMP_VALUE}_{rank}"
    try:
        fd = open_untrusted(run_folder, name, single_link=True)
    except FileNotFoundError:
        return "", f"no -malloc_dump record ({NOT_FINALIZED})"
    except UnsafeFile as e:
        return "", str(e)
    try:
        return read_capped(fd, MALLOC_MAX_BYTES, name).decode("utf-8", "replace"), ""
    except UnsafeFile as e:
        return "", str(e)
    finally:
        os.close(fd)


class ValgrindProbe(Probe):
    name = "valgrind"

    def __init__(self, own_objects: set[str], rank_vars: tuple[str, ...], python: bool = False):
        self.own_objects, self.rank_vars = own_objects, rank_vars  # rank_vars: its launcher's (report names)
        self.python = python  # a petsc4py program: the interpreter's suppressions too

    def prefix(self, logs: Path, petsc_dir: Path) -> list[str]:
        more = (logs / PYTHON_SUPPRESSIONS.name,) if self.python else ()
        return valgrind_prefix(logs, petsc_dir, self.rank_vars, more)

    def prepare(self, folders: RunFolders, ranks: int) -> None:
        if self.python:  # where the sandboxed run can read it (hpcbench's own folders are not shown)
            shutil.copyfile(PYTHON_SUPPRESSIONS, folders.logs / PYTHON_SUPPRESSIONS.name)
        self.reports = [HeldFile.create(folders.logs, report_name(r)) for r in range(ranks)]

    def collect(self, run: RunResult, folders: RunFolders) -> None:
        summary, problems, found = ValgrindSummary(ran=True), [], 0
        try:
            for r, held in enumerate(self.reports):
                why = _held_problem(held, f"valgrind report for rank {r}") or self._read(held, summary)
                problems += [f"rank {r}: {why}"] if why else []
                found += not why
        finally:
            for held in self.reports:
                held.close()
        summary.parse_error = "; ".join(problems)
        run.valgrind = summary
        run.instruments.append(InstrumentCheck(name=self.name, expected=len(self.reports), found=found,
                                               problem=summary.parse_error))

    def _read(self, held: HeldFile, summary: ValgrindSummary) -> str:
        stream = CappedReader(held.fd, VALGRIND_MAX_BYTES)
        check = read_report(stream, self.own_objects, summary)
        if stream.over:
            return f"{held.path.name} is larger than {VALGRIND_MAX_BYTES} bytes: not read past that"
        if check.problem:
            return f"{held.path.name} is {check.problem}"
        if check.tool != "memcheck" or not check.finished:
            return f"{held.path.name} is not a finished memcheck report (valgrind stopped, or the file was cut)"
        return ""
