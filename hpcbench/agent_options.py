"""What a submission may ask of its runs: the PETSc options in its `args` and the rank
counts in its `ranks`, checked against what its problem allows (problem.json
`agent_options` and `allowed_ranks`).

hpcbench passes its own options to every run (`-malloc_debug -malloc_dump -options_left
-log_view ...`). A submission's args come first on the command line, so an option there
that renames, replaces or reads the options database (`-prefix_push x_` renames every
option after it), turns off or redirects logging, the allocator's checks or error
handling, or writes files through a viewer would switch off what measures the program.
Such options are refused with the reason; anything else must be among the options the
problem lets an agent choose (solver and preconditioner types, tolerances ...).

How PETSc reads argv (src/sys/objects/options.c of PETSc 3.26.1, PetscOptionsInsertArgs
and PetscOptionsValidKey): a token is an option name when it starts with one or two
dashes followed by a letter and is not a number (`-inf`, `-nan` are values); the next
token is its value unless it is itself a name; `-options_file`, `-options_file_yaml`,
`-options_string_yaml` and `-prefix_push` take the next token whatever it is; names are
compared without regard to case (strcasecmp). The checks below read argv the same way."""

from __future__ import annotations

import re
from collections.abc import Sequence

# PETSc's own reading of a name (options.c PetscOptionsValidKey): "-" or "--", then a letter,
# and not a number that C's strtod reads (from a letter that is only inf, infinity or nan).
_NUMBER_FROM_LETTER = re.compile(r"(infinity|inf|nan(\([A-Za-z0-9_]*\))?)(?![A-Za-z0-9_])", re.I)

# (pattern on the lower-case name with one leading dash, reason). First match wins.
DENIED: list[tuple[re.Pattern[str], str]] = [(re.compile(p), why) for p, why in [
    (r"^-prefix_(push|pop)$", "it changes the options prefix, renaming every option after it "
                               "(hpcbench's instrumentation included)"),
    (r"^-options_", "it reads, replaces or reports the options database; hpcbench's own options "
                    "must reach PETSc as it passes them"),
    (r"^-skip_petscrc$", "which option files PETSc reads is hpcbench's choice"),
    (r"^-(help|h|version)$", "it prints PETSc's help or version instead of running the program"),
    (r"^-(log|info|history|objects_dump|saws)(_|$)", "logging and profiling are hpcbench's (-log_view "
                                                     "is how it times the program)"),
    (r"(^-|_)(malloc|memory|checkstack|check_pointer_intensity)(_|$)",
     "the allocator's checks are hpcbench's memory gate"),
    (r"^-(on_error|error_output|no_signal_handler|start_in_debugger|stop_for_debugger|debugger|"
     r"display|fp_trap|petsc_ci|compare|mpi_)", "error handling, debugging and MPI set-up are hpcbench's"),
    (r"(^-|_)(view|viewer|monitor|draw|converged_reason|dump|test)(_|$)",
     "viewers, monitors and reports print or write files: a run's output is the program's answer, "
     "its records are hpcbench's"),
]]

_PATTERN = re.compile(r"^-[a-z][a-z0-9_]*\*?$")
# A value a submission may give: a number, a name or a comma-separated list of them. PETSc reads
# a viewer as `type:file:format:mode` from the value of any option that takes one (every object's
# -X_view, -X_monitor, but also -ksp_converged_rate, -ksp_compute_eigenvalues, -..._plot_...:
# no word list covers them), and a file name needs '/' or ':'; with neither allowed, no option
# writes a file, however it is spelled. Shown without a value such an option prints to stdout:
# the program's own output, which its checks read.
_PLAIN_VALUE = re.compile(r"[A-Za-z0-9_.+\-]+(,[A-Za-z0-9_.+\-]+)*")
# What every launcher passes on (E2BIG: Linux caps one argument at 128 KiB and argv and the
# environment together at a quarter of the stack limit; a batch script's line may be shorter).
MAX_ARGS, MAX_ARG_CHARS, MAX_ARGS_CHARS = 64, 256, 4096


def is_option_name(token: str) -> bool:
    """Whether PETSc takes `token` for an option name (options.c PetscOptionsValidKey)."""
    if not token.startswith("-"):
        return False
    key = token[1:] if token.startswith("--") else token
    if len(key) < 2 or not key[1].isalpha() or not key[1].isascii():
        return False
    return not _NUMBER_FROM_LETTER.match(key[1:])


def normalized(name: str) -> str:
    """The name as PETSc compares it: lower case, one leading dash."""
    return "-" + name.lstrip("-").lower()


def check_pattern(pattern: str) -> str | None:
    """Why `pattern` (an `agent_options` entry of problem.json) is not usable, or None."""
    if not _PATTERN.match(pattern):
        return (f"{pattern!r} must be an option name ('-ksp_type') or a prefix ending in '*' ('-tao_ls_*'), "
                "lower case, letters, digits and '_'")
    why = denied(pattern.rstrip("*").rstrip("_"))
    if why:
        return f"{pattern!r} can never be allowed: {why}"
    return None


def denied(name: str) -> str | None:
    """The reason an option is never accepted from a submission, or None."""
    for pat, why in DENIED:
        if pat.search(name):
            return why
    return None


def allowed_by(name: str, patterns: Sequence[str]) -> bool:
    return any(name.startswith(p[:-1]) if p.endswith("*") else name == p for p in patterns)


def args_refusal(args: Sequence[str], patterns: Sequence[str], case_options: Sequence[str] = ()) -> str | None:
    """Why a submission's `args` cannot be passed to its runs, or None when every option in
    them is one the problem allows (`patterns`: problem.json `agent_options`).
    `case_options`: the problem's own options, set by its test cases."""
    if len(args) > MAX_ARGS or sum(len(a) + 1 for a in args) > MAX_ARGS_CHARS:
        return (f"{len(args)} arguments of {sum(len(a) for a in args)} characters: at most {MAX_ARGS} arguments "
                f"and {MAX_ARGS_CHARS} characters in all")
    expects_value = False
    for i, token in enumerate(args):
        if len(token) > MAX_ARG_CHARS:
            return f"argument {i + 1} ({token[:60]!r}...) has {len(token)} characters: at most {MAX_ARG_CHARS}"
        if not is_option_name(token):
            if not expects_value:
                return (f"argument {i + 1} ({token[:60]!r}) is not an option and follows no option "
                        "(options start with '-' and a letter)")
            if not _PLAIN_VALUE.fullmatch(token):
                return (f"argument {i + 1} ({token[:60]!r}), the value of {args[i - 1][:60]!r}, is refused: a value "
                        "is a number, a name or a comma-separated list of them (a ':' or '/' names a viewer or a "
                        "file, and options that take one write files)")
            expects_value = False
            continue
        name = normalized(token)
        if any(c.isspace() for c in name) or "=" in name:
            return f"argument {i + 1} ({token[:60]!r}) is not one option name (a space or '=' inside it)"
        why = denied(name)
        if why:
            return f"{token[:60]!r} is refused: {why}"
        if name in {normalized(o) for o in case_options}:
            return f"{token[:60]!r} is refused: the problem's test cases set it"
        if not allowed_by(name, patterns):
            shown = ", ".join(patterns) if patterns else "none"
            return f"{token[:60]!r} is not an option this problem lets a submission set (allowed: {shown})"
        expects_value = True
    return None


def ranks_refusal(ranks: Sequence[int], allowed: Sequence[int] | None) -> str | None:
    """Why a submission's `ranks` are not ones its problem runs at (None: any count allowed)."""
    if allowed is None:
        return None
    bad = sorted({r for r in ranks if r not in allowed})
    if bad:
        return (f"{', '.join(map(str, bad))} {'is not a rank count' if len(bad) == 1 else 'are not rank counts'} "
                f"this problem runs at (allowed: {', '.join(map(str, sorted(allowed)))})")
    return None
