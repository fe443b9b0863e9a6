#!/usr/bin/env python3
"""Stand-in for PBS Pro's qsub, qstat and qdel: PBS cannot be installed on the test machines.

It keeps jobs in $FAKE_PBS_DIR/state.json and answers in PBS Pro's documented formats
(PBS Professional Reference Guide: qsub prints the job id, `1234.server` or `1234[].server`
for an array; `qstat -xf -F json` prints {"timestamp", "pbs_version", "pbs_server", "Jobs":
{id: {"job_state", "Exit_status", "comment", "array_index", ...}}}; an unknown id gives
"qstat: Unknown Job Id ID" on stderr and exit status 153; qdel of a finished job exits 35).
Jobs do not run by themselves: the test plays the server (tests/test_pbs.py::serve).

qsub refuses what OpenPBS's qsub and server refuse that a generated script could contain
(openpbs/openpbs cd7ab5e, src/cmds/qsub.c and src/lib/Liblog/pbs_messages.c): a job array
that is not rerunnable ("cannot submit non-rerunable Array Job"), a malformed -r, select or
walltime ("illegal -l value"), an unknown queue ("Unknown queue"), a shape outside the queue's
limits ("Job violates queue and/or server resource limits") and a job beyond the queue's
per-user limit ("would exceed queue Q's per-user limit"). The queues and their limits come
from FAKE_PBS_QUEUES: "name[:min-max[:walltime_min[:jobs_per_user]]],..." (default "debug")."""
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


def queues() -> dict[str, dict]:
    """FAKE_PBS_QUEUES: name[:min-max[:walltime_min[:jobs_per_user]]], comma-separated."""
    out = {}
    for item in os.environ.get("FAKE_PBS_QUEUES", "debug").split(","):
        name, *rest = item.split(":")
        lo, _, hi = (rest[0] if rest else "1-0").partition("-")
        out[name] = {"min": int(lo), "max": int(hi or 0), "walltime_s": int(rest[1]) * 60 if len(rest) > 1 else 0,
                     "per_user": int(rest[2]) if len(rest) > 2 else 0}
    return out


def seconds(walltime: str) -> int | None:
    """PBS duration [[hours:]minutes:]seconds, or None if malformed."""
    if not re.fullmatch(r"\d+(:\d+){0,2}", walltime):
        return None
    total = 0
    for part in walltime.split(":"):
        total = total * 60 + int(part)
    return total


def refusal(text: str, opts: dict[str, list[str]], s: dict) -> tuple[str, int] | None:
    """What OpenPBS would say of this script, or None if it takes it."""
    rerun = opts.get("r", ["y"])[-1]
    if rerun not in ("y", "n"):
        return "qsub: illegal -r value", 2
    if opts.get("J") and rerun == "n":
        return "qsub:  cannot submit non-rerunable Array Job", 2
    if opts.get("J") and not re.fullmatch(r"\d+-\d+(:\d+)?(%\d+)?", opts["J"][-1]):
        return "qsub: illegal -J value", 2
    res = dict(item.split("=", 1) for item in opts.get("l", []) if "=" in item)
    if any("=" not in item for item in opts.get("l", [])):
        return "qsub: illegal -l value", 2
    select = res.get("select", "1")
    if not re.fullmatch(r"[1-9]\d*(:\w+=[\w.\-]+)*(\+[1-9]\d*(:\w+=[\w.\-]+)*)*", select):
        return "qsub: illegal -l value", 2
    wall = seconds(res["walltime"]) if "walltime" in res else 0
    if wall is None:
        return "qsub: illegal -l value", 2
    qname = opts.get("q", ["workq"])[-1]
    known = queues()
    if qname not in known:
        return f"qsub: Unknown queue {qname}", 170
    q = known[qname]
    nodes = sum(int(chunk.split(":")[0]) for chunk in select.split("+"))
    if nodes < q["min"] or (q["max"] and nodes > q["max"]) or (q["walltime_s"] and wall > q["walltime_s"]):
        return "qsub: Job violates queue and/or server resource limits", 188
    tasks = 1
    if opts.get("J"):
        lo, hi = re.match(r"(\d+)-(\d+)", opts["J"][-1]).groups()  # type: ignore[union-attr]
        tasks = int(hi) - int(lo) + 1
    mine = [j for j in s["jobs"].values() if j["queue"] == qname and j["job_state"] not in ("F", "X")
            and not j.get("array")]  # every subjob is a job to the per-user limit; not the array itself
    if q["per_user"] and len(mine) + tasks > q["per_user"]:
        return f"qsub: would exceed queue {qname}'s per-user limit", 188
    return None


def qsub(args: list[str]) -> int:
    script = Path(args[-1])
    text = script.read_text()
    many: dict[str, list[str]] = {}
    for key, val in re.findall(r"^#PBS -(\w) (.+)$", text, re.M):
        many.setdefault(key, []).append(val.strip())
    opts = {k: v[-1] for k, v in many.items()}
    s = load()
    refused = refusal(text, many, s)
    if refused:
        print(refused[0], file=sys.stderr)
        return refused[1]
    n = s["next"]
    s["next"] += 1
    base = {"Job_Name": opts.get("N", ""), "queue": opts.get("q", "workq"), "Account_Name": opts.get("A", ""),
            "job_state": "Q", "script": str(script), "Resource_List": {"walltime": "", "select": ""}}
    for key, val in re.findall(r"^#PBS -l (\w+)=(.+)$", text, re.M):
        base["Resource_List"][key] = val
    m = re.search(r"^#PBS -J (\d+)-(\d+)(?:%(\d+))?$", text, re.M)
    if m:
        jid = f"{n}[].{SERVER}"
        s["jobs"][jid] = {**base, "job_state": "B", "array": True}  # its subjobs below count as jobs
        if m.group(3):  # -J a-b%N: at most N subjobs run at once (qsub.c: max_run_subjobs)
            s["jobs"][jid]["max_run_subjobs"] = int(m.group(3))
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
