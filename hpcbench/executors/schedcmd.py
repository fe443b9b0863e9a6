"""Every scheduler command (sbatch, squeue, sacct, scontrol, scancel, qsub, qstat, qdel) runs
here: with a timeout, retried with backoff when the scheduler did not answer, and, when it
never does, an error that says so (SchedulerUnreachable) instead of a hang, a silent stall or
an empty answer that would read as "the scheduler does not know this job".

What counts as "did not answer": our own timeout, and the client's connection errors. The
Slurm wording was read from the Slurm 23.02 clients of Debian's slurm-wlm against a
controller and a slurmdbd that were not running (a copy of the test cluster's slurm.conf
with their ports changed): sbatch/squeue/scancel/scontrol print "Unable to contact slurm
controller (connect failure)" after about 9 s, sacct "Connection refused" and "Problem
talking to the database" at once. PBS Pro's clients say "Connection refused" or "cannot
connect to server" (qstat/qsub: "pbs_iff: cannot connect to host", "Communication failure").

A submission (sbatch, qsub) is retried only after a connection failure, which means it was
never received; after a timeout it may have been, so it is not sent again: the error says so.

`python -m hpcbench.executors.schedcmd [--timeout S] [--tries N] [--submit] -- CMD ...` runs a
command under the same rules and passes its output and exit status through: submitit runs
sbatch through it (executors/slurm.py)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hpcbench.errors import HpcbenchError

if TYPE_CHECKING:
    from hpcbench.schedulers.settings import BatchConfig

NO_CONNECTION = ("Unable to contact slurm controller", "Connection refused", "Problem talking to the database",
                 "cannot connect to server", "cannot connect to host", "Communication failure",
                 "Connection timed out", "Transport endpoint is not connected")
# The request may have arrived: worth asking again for a query, not for a submission.
MAY_HAVE_ARRIVED = ("Socket timed out on send/recv operation", "Slurm temporarily unable")
EXIT_UNREACHABLE = 69  # sysexits.h EX_UNAVAILABLE, from the command-line form


class SchedulerUnreachable(HpcbenchError):
    """The scheduler did not answer a command, every try."""


@dataclass(frozen=True)
class Policy:
    timeout_s: float = 30.0
    tries: int = 3
    backoff_s: float = 2.0  # before the second try; doubled each time
    max_backoff_s: float = 30.0


QUERY = Policy()
SUBMIT = Policy(timeout_s=120.0, tries=3)


def policies(batch: BatchConfig) -> tuple[Policy, Policy]:
    """(query, submission) policies from a site's `batch` settings."""
    return (Policy(timeout_s=batch.command_timeout_s, tries=batch.command_tries),
            Policy(timeout_s=batch.submit_timeout_s, tries=batch.command_tries))


def _no_answer(p: subprocess.CompletedProcess, submission: bool) -> bool:
    text = f"{p.stdout}\n{p.stderr}"
    if any(w in text for w in NO_CONNECTION):
        return True
    return not submission and any(w in text for w in MAY_HAVE_ARRIVED)


def _run_once(argv: list[str], timeout_s: float, env: dict[str, str] | None) -> subprocess.CompletedProcess:
    """One call in a session of its own, so a timeout kills the client and whatever it started."""
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                          start_new_session=True) as proc:
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
        return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def call(argv: list[str], policy: Policy = QUERY, submission: bool = False, env: dict[str, str] | None = None,
         notify: Callable[[str], None] | None = None, sleep: Callable[[float], None] = time.sleep
         ) -> subprocess.CompletedProcess:
    """Run a scheduler command; its answer (any exit status) once it answered, or
    SchedulerUnreachable once it did not, `policy.tries` times. A missing command is an error
    at once (HpcbenchError naming it)."""
    say = notify if notify is not None else (lambda m: print(f"hpcbench: {m}", file=sys.stderr))
    name = os.path.basename(argv[0])
    why = ""
    t0 = time.monotonic()
    for attempt in range(1, policy.tries + 1):
        try:
            p = _run_once(argv, policy.timeout_s, env)
        except FileNotFoundError:
            raise HpcbenchError(f"{name}: not found on PATH (is this a login node of the site's scheduler?)") from None
        except subprocess.TimeoutExpired:
            why = f"no answer within {policy.timeout_s:g} s"
            if submission:
                raise SchedulerUnreachable(f"{name} gave {why}; the submission may or may not have reached the "
                                           "scheduler, so it was not sent again. Check the queue (squeue/qstat) "
                                           "before submitting again") from None
        else:
            if not _no_answer(p, submission):
                return p
            why = (p.stderr or p.stdout).strip().splitlines()[-1][:300] if (p.stderr or p.stdout).strip() else \
                f"exit {p.returncode}"
        if attempt < policy.tries:
            wait = min(policy.backoff_s * 2 ** (attempt - 1), policy.max_backoff_s)
            say(f"{name} did not answer ({why}); try {attempt + 1} of {policy.tries} in {wait:g} s")
            sleep(wait)
    raise SchedulerUnreachable(f"{name} did not answer: {why} ({policy.tries} tries over "
                               f"{time.monotonic() - t0:.0f} s)")


def main(argv: list[str] | None = None) -> int:
    """The command-line form, for tools that run the command themselves (submitit runs sbatch)."""
    args = list(sys.argv[1:] if argv is None else argv)
    opts = {"--timeout": QUERY.timeout_s, "--tries": float(QUERY.tries)}
    submission = False
    while args and args[0] != "--":
        flag = args.pop(0)
        if flag == "--submit":
            submission = True
        else:
            opts[flag] = float(args.pop(0))
    cmd = args[1:]
    if not cmd:
        print("usage: python -m hpcbench.executors.schedcmd [--timeout S] [--tries N] [--submit] -- CMD ...",
              file=sys.stderr)
        return 2
    try:
        p = call(cmd, Policy(timeout_s=opts["--timeout"], tries=int(opts["--tries"])), submission)
    except HpcbenchError as e:
        print(f"hpcbench: {e}", file=sys.stderr)
        return EXIT_UNREACHABLE
    sys.stdout.write(p.stdout)
    sys.stderr.write(p.stderr)
    return p.returncode


if __name__ == "__main__":
    sys.exit(main())
