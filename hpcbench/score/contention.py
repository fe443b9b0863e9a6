"""Which runs shared a core with another build or run of the campaign while they ran.

Every build and run records when it started, how long it took, where (host) and on which
CPUs: a run's the union of what the job wrapper saw its ranks on (runs[].affinity, changes
included), else the CPUs it was given (placement.cpus); a build's the CPUs it was started on.
Two steps on one host whose times overlap and whose CPU sets meet were contended: each
was timed while the other took some of its CPU. With every run bound to cores of its own
(jobs/binding.py) this finds nothing; it finds the launcher that ignored the binding, a site
template that binds by itself, a scheduler that did not bind (Slurm's task/none), or a
program that moved itself onto other cores. Steps with no CPUs recorded (records written
before this, a launcher whose ranks were not seen) are never counted either way."""

from __future__ import annotations

from dataclasses import dataclass

from hpcbench.jobs.cores import parse_cpu_list

Key = tuple[str, int]  # (submission path, run index; -1 for its build)


@dataclass(frozen=True)
class Span:
    key: Key
    label: str  # "agent/problem/attempt build" or ".../case rR kindN"
    host: str
    cpus: frozenset[int]
    start: float
    end: float


def _cpus(text: str) -> frozenset[int]:
    try:
        return frozenset(parse_cpu_list(text))
    except ValueError:
        return frozenset()


def spans_of(path: str, label: str, record: dict) -> list[Span]:
    """The build and runs of one record (its JSON as stored: a dict) that say where they ran."""
    out = []
    host = record.get("hostname", "")
    b = record.get("build") or {}
    if b.get("started_at") and b.get("cpus"):
        out.append(Span((path, -1), f"{label} build", host, _cpus(b["cpus"]), b["started_at"],
                        b["started_at"] + b.get("wall_s", 0.0)))
    for i, r in enumerate(record.get("runs", [])):
        seen = list(r.get("affinity") or [])
        cpus = frozenset().union(*(_cpus(a.get("cpus", "")) | _cpus(a.get("changed_to", "")) for a in seen)) \
            if seen else _cpus((r.get("placement") or {}).get("cpus", ""))
        if not r.get("started_at") or not cpus:
            continue
        where = seen[0].get("host") if seen else ((r.get("hostnames") or [host])[0])
        out.append(Span((path, i), f"{label} {r.get('case')} r{r.get('ranks')} {r.get('kind')}{r.get('repeat', 0)}",
                        where or host, cpus, r["started_at"], r["started_at"] + r.get("wall_s", 0.0)))
    return out


def contended(spans: list[Span]) -> dict[Key, str]:
    """For every span that overlapped another on a common CPU of the same host: why, in words."""
    out: dict[Key, str] = {}
    by_host: dict[str, list[Span]] = {}
    for s in spans:
        by_host.setdefault(s.host, []).append(s)
    for group in by_host.values():
        group.sort(key=lambda s: s.start)
        active: list[Span] = []
        for s in group:
            active = [a for a in active if a.end > s.start]
            for a in active:
                shared = a.cpus & s.cpus
                if shared and a.key != s.key:
                    overlap = min(a.end, s.end) - s.start
                    cpu = ",".join(map(str, sorted(shared)))
                    out.setdefault(s.key, f"shared CPU {cpu} with {a.label} for {overlap:.2f} s")
                    out.setdefault(a.key, f"shared CPU {cpu} with {s.label} for {overlap:.2f} s")
            active.append(s)
    return out
