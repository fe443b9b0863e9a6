"""Core slots shared by concurrently running jobs (hpcbench.jobs.slots): real
processes and real flock locks."""

import json
import os
import signal
import subprocess
import sys
import time

from hpcbench.jobs.slots import PRIORITY_ENV, CoreSlots

HOLDER = r"""
import json, sys, time
from pathlib import Path
from hpcbench.jobs.slots import PRIORITY_ENV, CoreSlots
folder, count, cores, hold_s, log = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
min_s, max_s = float(sys.argv[6]), float(sys.argv[7])
slots = CoreSlots(Path(folder), count)
slots.patience_s = 0.3
with slots.hold(cores, min_s, max_s):
    t0 = time.time()
    time.sleep(hold_s)
    t1 = time.time()
Path(log).write_text(json.dumps([cores, t0, t1]))
"""


def _spawn(tmp_path, name, cores, hold_s, count=2, priority=None, min_s=0.0, max_s=0.0):
    log = tmp_path / f"{name}.json"
    env = {**os.environ, **({PRIORITY_ENV: str(priority)} if priority is not None else {})}
    p = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path / "slots"), str(count), str(cores),
                          str(hold_s), str(log), str(min_s), str(max_s)], env=env)
    return p, log


def _queued(tmp_path, n: int) -> None:
    deadline = time.time() + 20
    while time.time() < deadline:
        q = tmp_path / "slots" / "queue"
        if q.is_file() and len(q.read_text().split()) >= n:
            return
        time.sleep(0.02)
    raise AssertionError(f"{n} waiters never queued")


def test_the_job_with_the_most_work_goes_first_whatever_its_arrival(tmp_path):
    """Priority 0 (the longest job, executors/shapes.start_order) is served before an earlier
    waiter of priority 9: the long job does not end the campaign alone on an idle machine."""
    first, first_log = _spawn(tmp_path, "busy", 1, 3.0, count=1, priority=5)
    while not first_log.exists() and not (tmp_path / "slots" / "slot0").exists():
        time.sleep(0.02)
    time.sleep(0.3)  # the busy one holds the only slot
    late, late_log = _spawn(tmp_path, "low", 1, 0.2, count=1, priority=9)
    _queued(tmp_path, 1)
    urgent, urgent_log = _spawn(tmp_path, "high", 1, 0.2, count=1, priority=0)
    for p in (first, late, urgent):
        assert p.wait(timeout=60) == 0
    low_start, high_start = json.loads(late_log.read_text())[1], json.loads(urgent_log.read_text())[1]
    assert high_start < low_start, "the earlier, low-priority waiter went first"


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
