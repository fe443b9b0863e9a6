#!/usr/bin/env python3
"""Stand-in for PBS Pro's qsub, qstat and qdel: PBS cannot be installed on the test machines.

It keeps jobs in $FAKE_PBS_DIR/state.json and answers in PBS Pro's documented formats
(PBS Professional Reference Guide: qsub prints the job id, `1234.server` or `1234[].server`
for an array; `qstat -xf -F json` prints {"timestamp", "pbs_version", "pbs_server", "Jobs":
{id: {"job_state", "Exit_status", "comment", "array_index", ...}}}; an unknown id gives
"qstat: Unknown Job Id ID" on stderr and exit status 153; qdel of a finished job exits 35).
Jobs do not run by themselves: the test plays the server (tests/test_pbs.py::serve)."""
import json
import os
import re
import sys
from pathlib import Path

SERVER = "pbs-test"
STATE = Path(os.environ["FAKE_PBS_DIR"]) / "state.json"


def load() -> dict:
    return json.loads(STATE.read_text()) if STATE.is_file() else {"next": 1001, "jobs": {}}


def save(s: dict) -> None:
    STATE.write_text(json.dumps(s, indent=1))


def log(argv: list[str]) -> None:
    with open(STATE.parent / "calls.log", "a") as f:
        f.write(json.dumps(argv) + "\n")


def qsub(args: list[str]) -> int:
    script = Path(args[-1])
    text = script.read_text()
    opts = dict(re.findall(r"^#PBS -(\w) (.+)$", text, re.M))
    queues = os.environ.get("FAKE_PBS_QUEUES", "debug").split(",")
    if opts.get("q") and opts["q"] not in queues:
        print(f"qsub: Unknown queue {opts['q']}", file=sys.stderr)
        return 170
    s = load()
    n = s["next"]
    s["next"] += 1
    base = {"Job_Name": opts.get("N", ""), "queue": opts.get("q", "workq"), "Account_Name": opts.get("A", ""),
            "job_state": "Q", "script": str(script), "Resource_List": {"walltime": "", "select": ""}}
    for key, val in re.findall(r"^#PBS -l (\w+)=(.+)$", text, re.M):
        base["Resource_List"][key] = val
    m = re.search(r"^#PBS -J (\d+)-(\d+)$", text, re.M)
    if m:
        jid = f"{n}[].{SERVER}"
        s["jobs"][jid] = {**base, "job_state": "B", "array": True}
        for i in range(int(m.group(1)), int(m.group(2)) + 1):
            s["jobs"][f"{n}[{i}].{SERVER}"] = {**base, "array_index": i}
    else:
        jid = f"{n}.{SERVER}"
        s["jobs"][jid] = base
    save(s)
    print(jid)
    return 0


def qstat(args: list[str]) -> int:
    ids = [a for a in args if not a.startswith("-") and a not in ("json",)]
    s = load()
    out, rc = {}, 0
    for jid in ids:
        if jid not in s["jobs"]:
            print(f"qstat: Unknown Job Id {jid}", file=sys.stderr)
            rc = 153
            continue
        if "-t" in args and jid.endswith(f"[].{SERVER}"):
            stem = jid.split("[")[0]
            out.update({k: v for k, v in s["jobs"].items() if k.startswith(stem + "[")})
        out[jid] = s["jobs"][jid]
    print(json.dumps({"timestamp": 1764720000, "pbs_version": "2022.1.1", "pbs_server": SERVER,
                      "Jobs": {k: {kk: vv for kk, vv in v.items() if kk != "script"} for k, v in out.items()}},
                     indent=4))
    return rc


def qdel(args: list[str]) -> int:
    s = load()
    rc = 0
    for jid in args:
        job = s["jobs"].get(jid)
        if job is None:
            print(f"qdel: Unknown Job Id {jid}", file=sys.stderr)
            rc = 153
        elif job["job_state"] in ("F", "X"):
            print(f"qdel: Job has finished {jid}", file=sys.stderr)
            rc = 35
        else:
            job["qdel"] = True  # the server delivers SIGTERM to a running job (see serve)
            if job["job_state"] == "Q":
                job.update(job_state="F", comment="Job deleted by user")
    save(s)
    return rc


def main() -> int:
    name = Path(sys.argv[0]).name
    log([name, *sys.argv[1:]])
    return {"qsub": qsub, "qstat": qstat, "qdel": qdel}[name](sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
