"""Core slots shared by concurrently running jobs (hpcbench.jobs.slots): real
processes and real flock locks."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hpcbench.jobs.slots import PRIORITY_ENV, CoreSlots, Waiter, admitted

HOLDER = r"""
import json, sys, time
from pathlib import Path
from hpcbench.jobs.slots import PRIORITY_ENV, CoreSlots
folder, count, cores, hold_s, log = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
min_s, max_s, patience_s = float(sys.argv[6]), float(sys.argv[7]), float(sys.argv[8])
slots = CoreSlots(Path(folder), count)
slots.patience_s = patience_s
with slots.hold(cores, min_s, max_s):
    t0 = time.time()
    time.sleep(hold_s)
    t1 = time.time()
Path(log).write_text(json.dumps([cores, t0, t1]))
"""


def _spawn(tmp_path, name, cores, hold_s, count=2, priority=None, min_s=0.0, max_s=0.0, patience_s=0.3):
    log = tmp_path / f"{name}.json"
    env = {**os.environ, **({PRIORITY_ENV: str(priority)} if priority is not None else {})}
    p = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path / "slots"), str(count), str(cores),
                          str(hold_s), str(log), str(min_s), str(max_s), str(patience_s)], env=env)
    return p, log


def _queued(tmp_path, n: int) -> None:
    deadline = time.time() + 20
    while time.time() < deadline:
        q = tmp_path / "slots" / "queue"
        if q.is_file() and len(q.read_text().split()) >= n:
            return
        time.sleep(0.02)
    raise AssertionError(f"{n} waiters never queued")


def _busy(tmp_path, hold_s: float):
    """A holder of the only slot of a one-slot machine, once it holds it."""
    p, log = _spawn(tmp_path, "busy", 1, hold_s, count=1, priority=5)
    while not log.exists() and not (tmp_path / "slots" / "slot0").exists():
        time.sleep(0.02)
    time.sleep(0.3)
    return p


def test_the_job_with_the_most_work_goes_first_whatever_its_arrival(tmp_path):
    """Priority 0 (the longest job, executors/shapes.start_order) is served before an earlier
    waiter of priority 9: the long job does not end the campaign alone on an idle machine."""
    busy = _busy(tmp_path, 2.0)
    late, late_log = _spawn(tmp_path, "low", 1, 0.2, count=1, priority=9, patience_s=30)
    _queued(tmp_path, 1)
    urgent, urgent_log = _spawn(tmp_path, "high", 1, 0.2, count=1, priority=0, patience_s=30)
    for p in (busy, late, urgent):
        assert p.wait(timeout=60) == 0
    low_start, high_start = json.loads(late_log.read_text())[1], json.loads(urgent_log.read_text())[1]
    assert high_start < low_start, "the earlier, low-priority waiter went first"


def test_a_waiter_past_its_patience_goes_ahead_of_fresh_higher_priority_ones(tmp_path):
    """Aging: the low-priority waiter has waited its patience when the priority-0 one comes, so
    it goes first (the packed Slurm campaign had a priority-0 job's stream of one-rank runs
    keep a core busy for 10 s while the other idled under lower-priority two-rank waiters)."""
    busy = _busy(tmp_path, 4.0)
    late, late_log = _spawn(tmp_path, "low", 1, 0.2, count=1, priority=9, patience_s=2.0)
    _queued(tmp_path, 1)
    time.sleep(2.5)  # past its patience; the busy holder ends about 1 s later, within the new one's
    urgent, urgent_log = _spawn(tmp_path, "high", 1, 0.2, count=1, priority=0, patience_s=2.0)
    for p in (busy, late, urgent):
        assert p.wait(timeout=60) == 0
    low_start, high_start = json.loads(late_log.read_text())[1], json.loads(urgent_log.read_text())[1]
    assert low_start < high_start, "a fresh higher-priority waiter jumped one past its patience"


def test_concurrent_holders_never_use_more_cores_than_there_are(tmp_path):
    procs = [_spawn(tmp_path, f"h{i}", cores, 0.3) for i, cores in enumerate([1, 2, 1, 1, 2, 1])]
    for p, _ in procs:
        assert p.wait(timeout=60) == 0
    spans = [json.loads(log.read_text()) for _, log in procs]
    for _, t, _ in spans:  # at every start instant, count the cores held
        held = sum(c for c, a, b in spans if a <= t < b)
        assert held <= 2, spans
    # some pair of one-core holders really overlapped: the slots share, not serialise
    ones = [s for s in spans if s[0] == 1]
    assert any(a[1] < b[2] and b[1] < a[2] for a in ones for b in ones if a is not b)


def test_a_wide_waiter_is_not_starved_by_narrow_ones(tmp_path):
    first, _ = _spawn(tmp_path, "n0", 1, 1.0)
    time.sleep(0.3)
    wide, wide_log = _spawn(tmp_path, "wide", 2, 0.1)
    time.sleep(0.2)
    # a stream of narrow holders arriving after the wide one
    narrow = [_spawn(tmp_path, f"n{i}", 1, 0.6) for i in range(1, 5)]
    for p, _ in [(first, None), (wide, None), *narrow]:
        assert p.wait(timeout=60) == 0
    _, w0, _ = json.loads(wide_log.read_text())
    last_narrow_start = max(json.loads(log.read_text())[1] for _, log in narrow)
    assert w0 < last_narrow_start, "the wide holder waited for every narrow one"


def test_a_narrow_run_sure_to_end_first_backfills_past_a_blocked_wide_one(tmp_path):
    """A holds one of two cores for 4 s and says it cannot end sooner; the wide waiter W is
    blocked behind it. A narrow run that will take at most 0.5 s starts on the idle core at
    once; one whose length is unknown, and one that may outlast A, wait until W has run."""
    a, a_log = _spawn(tmp_path, "a", 1, 4.0, min_s=4.0, max_s=4.5)
    slot_files = [tmp_path / "slots" / f"slot{i}" for i in range(2)]
    while not any(f.is_file() and f.read_text().strip() for f in slot_files):
        time.sleep(0.02)  # A holds its core and has written when it can end
    w, w_log = _spawn(tmp_path, "wide", 2, 0.2)
    _queued(tmp_path, 1)
    time.sleep(0.5)  # past W's patience: the next slots are reserved for it
    short, short_log = _spawn(tmp_path, "short", 1, 0.3, max_s=0.5)
    unknown, unknown_log = _spawn(tmp_path, "unknown", 1, 0.3)
    long_, long_log = _spawn(tmp_path, "long", 1, 0.3, max_s=10.0)
    for p in (a, w, short, unknown, long_):
        assert p.wait(timeout=60) == 0
    (_, _, a_end), (_, w_start, _) = json.loads(a_log.read_text()), json.loads(w_log.read_text())
    _, short_start, short_end = json.loads(short_log.read_text())
    assert short_start < a_end - 2.0 and short_end <= a_end, "the short run did not fill the idle core"
    assert w_start < a_end + 0.5, "the backfill delayed the wide run"
    for log in (unknown_log, long_log):
        assert json.loads(log.read_text())[1] >= w_start, f"{log.stem} jumped the reservation"


def test_a_killed_holder_frees_its_slots(tmp_path):
    p, _ = _spawn(tmp_path, "victim", 2, 60, count=2)
    slots = CoreSlots(tmp_path / "slots", 2)
    deadline = time.time() + 20
    while time.time() < deadline:  # until the victim holds both slots
        free = slots._try_take(2)
        if not free:
            break
        for fh in free:
            fh.close()
        time.sleep(0.05)
    assert slots._try_take(1) == [], "the victim never took its slots"
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    t0 = time.time()
    with slots.hold(2):
        pass
    assert time.time() - t0 < 5


def _w(name: int, cores: int, waited_s: float, priority: int = 1, max_s: float = 0.0, now: int = 10**18) -> Waiter:
    return Waiter(name, now - int(waited_s * 1e9), priority, cores, int(max_s * 1e9))


def test_admission_fills_the_free_cores_before_it_follows_priority():
    """The served set, as every waiter computes it under the queue mutex (pure function)."""
    now, patience = 10**18, 5.0
    narrow, wide, narrow2 = _w(1, 1, 1.0, priority=0), _w(2, 2, 1.0, priority=1), _w(3, 1, 0.5, priority=2)
    # an empty two-core machine: the two-rank run, not a lone one-rank run beside an idle core
    assert admitted([narrow, wide], 2, [], now, patience) == [wide]
    # two one-rank runs fill it as well as the wide one would: priority order stands
    assert admitted([narrow, wide, narrow2], 2, [], now, patience) == [narrow, narrow2]
    # one core free: the narrow one takes it
    assert admitted([narrow, wide], 1, [0], now, patience) == [narrow]
    # past its patience a narrow waiter goes first even onto an empty machine (no starvation)
    old = _w(4, 1, 6.0, priority=3)
    assert admitted([old, wide], 2, [], now, patience) == [old]
    # a wide waiter past its patience reserves: a fresh narrow run of unknown length waits,
    # one sure to end before the holder's earliest end (3 s from now) backfills
    blocked = _w(5, 2, 6.0)
    sure, unsure = _w(6, 1, 0.1, max_s=1.0), _w(7, 1, 0.1)
    assert admitted([blocked, unsure, sure], 1, [now + int(3e9)], now, patience) == [sure]
    assert admitted([blocked, sure], 1, [0], now, patience) == []  # the holder's end unknown


def test_a_jobs_priority_follows_the_work_it_has_left():
    """Longest remaining work first: planned runs weighted by cores (null runs once per rank
    count, valgrind as ten runs), each as long as the job's clean runs so far."""
    from hpcbench.jobs.job import Runner, planned_runs
    from hpcbench.jobs.records import CaseRun, JobSpec, Variant
    from hpcbench.jobs.slots import priority_for

    cases = [CaseRun(case=c, args=[], ranks=r, time_limit_s=30) for c, r in (("a", 1), ("b", 2), ("c", 4))]
    spec = JobSpec(job_id="j", agent="a", problem="p", attempt="1", source_dir="/x", entry="main.c",
                   files=["main.c"], runs=cases, variant=Variant(name="cpu", petsc_dir="/x"), work_dir="/x",
                   record_path="/x/r.json", cores=2, timing_repeats=3, valgrind=True)
    # cases: 4 runs each at 1, 2, 2 cores = 20; nulls at ranks 1, 2, 4: 3 x (1 + 2 + 2) = 15; valgrind 10 x 1
    assert planned_runs(spec) == 45
    runner = Runner.__new__(Runner)  # priority needs only the spec, the runs left and the walls so far
    runner.spec, runner.took, runner.runs_left = spec, {}, planned_runs(spec)
    assert runner.priority() == priority_for(45.0)
    runner.took = {(False, "a", 1): [0.5, 0.7]}  # runs of 0.6 s
    assert runner.priority() == priority_for(45 * 0.6)
    runner.skip(cases[1])  # finished by an earlier try: 4 runs x 2 cores
    assert runner.runs_left == 37
    assert priority_for(100.0) < priority_for(10.0) < priority_for(0.0)  # more left, served earlier


def test_admission_starts_the_narrowest_job_when_cores_stay_unused(tmp_path):
    """Twice the cores in flight; beyond that one more only after two polls with free cores
    that no waiter fits (then the narrowest job); never more than four per core."""
    from hpcbench.jobs.slots import Admission

    admit = Admission(tmp_path / "slots", 2)
    width = {"wide": 2, "narrow": 1}.get
    queue = ["wide", "narrow", "narrow"]
    assert admit.next(queue, 3, width) == 0  # under twice the cores: the start order
    held = admit.slots._try_take(1)  # one core busy, one free
    assert admit.next(queue, 4, width) is None  # free once: not yet
    assert admit.next(queue, 4, width) == 1  # free twice in a row: the narrowest
    assert admit.next(queue, 5, width) is None  # not again before that job could ask for a core
    time.sleep(admit.settle_s)
    assert [admit.next(queue, 5, width) for _ in range(2)] == [None, 1]
    assert admit.next(queue, 8, width) is None  # four per core at most
    admit = Admission(tmp_path / "slots", 2)
    (tmp_path / "slots" / "queue").write_text(f"{Waiter(os.getpid(), time.time_ns(), 0, 1)}\n")
    assert [admit.next(queue, 4, width) for _ in range(3)] == [None] * 3  # a waiter can use the free core
    for fh in held:
        fh.close()
    assert admit.next([], 0, width) is None


def test_a_waiter_takes_a_full_look_only_when_something_changed(tmp_path, monkeypatch):
    """Every full look takes the mutex, reads the queue and probes every slot: twelve waiters
    looking every 20 ms burned 0.18 cores (bench/slot_waiters.py). Between changes a waiter
    looks every `look_s` (a slot held by a process that never says it released it: time alone
    moves it)."""
    slots = CoreSlots(tmp_path, 1)
    looks: list[float] = []
    real = CoreSlots._my_turn

    def counting(self, me, queue):
        looks.append(time.monotonic())
        return real(self, me, queue)

    monkeypatch.setattr(CoreSlots, "_my_turn", counting)
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, sys, time\n"
        f"fh = open({str(tmp_path / 'slot0')!r}, 'a'); fcntl.flock(fh, fcntl.LOCK_EX)\n"
        "print('held', flush=True); time.sleep(1.5)")], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    t0 = time.monotonic()
    with slots.hold(1):
        waited = time.monotonic() - t0
    holder.wait()
    # one look per look_s (and the first): looking at every 20 ms poll made about 75 in 1.5 s
    assert waited >= 1.4 and len(looks) <= waited / CoreSlots.look_s + 3, (len(looks), waited)


def test_a_waiter_that_sees_nothing_change_backs_off(tmp_path, monkeypatch):
    """Between its full looks a waiter checks two files; it did so every 20 ms for as long as it
    waited (a packed allocation's slots were on the campaign's Lustre: metadata operations on the
    centre's servers). Now its naps double while nothing changes, up to look_s."""
    import fcntl

    from hpcbench.jobs import slots as slots_mod

    slots = CoreSlots(tmp_path, 1)
    fh = open(tmp_path / "slot0", "a")  # noqa: SIM115 (held by this test while the waiter waits)
    fcntl.flock(fh, fcntl.LOCK_EX)
    naps: list[float] = []

    class Enough(Exception):
        pass

    def nap(s: float) -> None:
        naps.append(s)
        if len(naps) >= 8:
            raise Enough

    monkeypatch.setattr(slots_mod.time, "sleep", nap)
    with pytest.raises(Enough), slots.hold(1):
        pass
    fh.close()
    assert naps[0] == CoreSlots.poll_s and max(naps) == CoreSlots.look_s, naps
    assert naps == sorted(naps)  # never shorter while nothing changed


def test_a_packed_allocations_slots_are_in_node_local_memory(tmp_path):
    """Not under the campaign's work folder (a centre's Lustre): /dev/shm, else $TMPDIR."""
    from hpcbench.jobs.pack import PackDriver, PackManifest
    from hpcbench.jobs.slots import node_local_root
    from hpcbench.schedulers.base import view_for

    m = PackManifest(scheduler="slurm", variant="cpu", specs=[], cores_per_node=2, work_dir=str(tmp_path),
                     summary=str(tmp_path / "s.json"))
    d = PackDriver(m, view_for("slurm", {"SLURM_JOB_ID": "77", "SLURM_CPUS_ON_NODE": "2"}))
    folder = d.slots_root
    assert folder.parent == node_local_root() and not folder.is_relative_to(tmp_path)
    assert node_local_root() == Path("/dev/shm") or not os.access("/dev/shm", os.W_OK)
