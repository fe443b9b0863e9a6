#!/usr/bin/env python3
"""A STAND-IN for HPE Cray PALS's `mpiexec` (ALCF Polaris, Aurora), which cannot run here.

It accepts the PALS options hpcbench emits (--np/-n, --ppn, --depth, --cpu-bind list:a,b:c,d
| depth | none, --hostfile, --env K=V) and starts the ranks with this machine's Open MPI,
each bound to its own entry of the --cpu-bind list (an Open MPI physical rankfile), so that
what PALS would do with the list is real here: the ranks' Cpus_allowed_list is the list's.
Every call is appended to $FAKE_PALS_LOG (one JSON argv per line) for the tests to read."""

from __future__ import annotations

import json
import os
import socket
import sys
import tempfile


def main(argv: list[str]) -> int:
    if os.environ.get("FAKE_PALS_LOG"):
        with open(os.environ["FAKE_PALS_LOG"], "a") as log:
            log.write(json.dumps(argv) + "\n")
    ranks, binds, env, i = 1, None, {}, 0
    while i < len(argv) and argv[i].startswith("-"):
        opt, val = argv[i], argv[i + 1] if i + 1 < len(argv) else ""
        if opt in ("--np", "-n"):
            ranks = int(val)
        elif opt == "--cpu-bind" and val.startswith("list:"):
            binds = [entry.split(",")[0] for entry in val[5:].split(":")]
        elif opt == "--env":
            k, _, v = val.partition("=")
            env[k] = v
        elif opt not in ("--ppn", "--depth", "--cpu-bind", "--hostfile"):
            print(f"pals stand-in: unknown option {opt}", file=sys.stderr)
            return 2
        i += 2
    cmd = ["mpiexec", "-n", str(ranks), "--oversubscribe"]
    if binds:
        # in the test session's folder, removed with it (this process execs mpiexec: it cannot clean up)
        fd, rankfile = tempfile.mkstemp(prefix="pals-rankfile.", dir=os.environ.get("HPCBENCH_TEST_SESSION"))
        with os.fdopen(fd, "w") as f:
            f.writelines(f"rank {r}={socket.gethostname()} slot={binds[r % len(binds)]}\n" for r in range(ranks))
        cmd += ["--mca", "rmaps_rank_file_physical", "1", "--rankfile", rankfile]
    for k, v in env.items():
        os.environ[k] = v
        cmd += ["-x", k]
    me = os.path.realpath(__file__)
    real = next(p for d in os.environ["PATH"].split(os.pathsep)
                if os.path.isfile(p := os.path.join(d, "mpiexec")) and os.path.realpath(p) != me)
    os.execv(real, [real, *cmd[1:], *argv[i:]])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
