"""Whole-campaign robustness: one bad input is rejected by name and the rest goes on; a full
disk stops a run with the file system and what was kept, and the same command resumes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import h5py
import numpy as np
import pytest

from hpcbench import store
from hpcbench.pipeline import plan_campaign
from hpcbench.plan.options import RunOptions
from hpcbench.score import scoring
from hpcbench.site import load_site
from hpcbench.store import integrity
from hpcbench.submission import load_submission
from tests.conftest import QUICK, hpcbench

GOOD_C = ("#include <petscsys.h>\nint main(int argc, char **argv)\n{\n"
          "  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));\n  PetscCall(PetscFinalize());\n  return 0;\n}\n")
BASE = {"entry": "main.c", "files": ["main.c"]}
NESTED = "[" * 100_000 + "]" * 100_000  # 200 kB: Python's json recursed until RecursionError

# name -> (submission.json bytes, words of the rejection, or None: planned)
HOSTILE = {
    "deep-list": ('{"entry": "main.c", "files": ["main.c"], "generation": {"x": ' + NESTED + '}}', "deeper than 32"),
    "deep-args": ('{"entry": "main.c", "files": ["main.c"], "args": ' + "[" * 5000 + "]" * 5000 + "}", "deeper"),
    "deep-dict": ('{"generation": ' + '{"a":' * 3000 + "1" + "}" * 3000 + "}", "deeper than 32"),
    "huge-int": (json.dumps({**BASE, "generation": {"prompt_tokens": 10**400}}), "integer of 401 digits"),
    "huge-int-extra": ('{"entry": "main.c", "files": ["main.c"], "generation": {"x": 1' + "0" * 4400 + "}}",
                       "integer of 4401 digits"),  # int() refuses past 4300 digits: a ValueError
    "nan": ('{"entry": "main.c", "files": ["main.c"], "generation": {"latency_s": NaN}}', "NaN"),
    "infinity": ('{"entry": "main.c", "files": ["main.c"], "generation": {"x": -Infinity}}', "Infinity"),
    "overflow-float": ('{"entry": "main.c", "files": ["main.c"], "generation": {"cost_usd": 1e999}}', "finite"),
    "bom": ("\ufeff" + json.dumps(BASE), "BOM"),
    "utf16": (json.dumps(BASE).encode("utf-16"), "not UTF-8"),
    "top-list": ("[]", "JSON object"),
    "null": ("null", "JSON object"),
    "empty": ("", "malformed JSON"),
    "attempt-list": (json.dumps({**BASE, "attempt": [1]}), "attempt"),
    "ranks-string": (json.dumps({**BASE, "ranks": "3"}), "ranks"),
    "files-object": (json.dumps({**BASE, "files": {"main.c": 1}}), "files"),
    "nul-in-kind": (json.dumps({"generation_error": "x", "generation_error_kind": "\x00\x01"}), None),
    "escape-in-model": (json.dumps({**BASE, "model": "\x1b]0;pwned\x07\x1b[31m"}), None),
    "many-keys": (json.dumps({**BASE, "generation": {f"k{i}": i for i in range(40000)}}), None),
    "good": (json.dumps(BASE), None),
}


def hostile_tree(root: Path) -> Path:
    for name, (text, _) in HOSTILE.items():
        d = root / "fz" / "vec-scatter" / name
        d.mkdir(parents=True)
        (d / "main.c").write_text(GOOD_C)
        (d / "submission.json").write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return root


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_each_hostile_submission_json_is_rejected_by_name_or_loads(tmp_path, name):
    d = hostile_tree(tmp_path) / "fz" / "vec-scatter" / name
    got = load_submission(d, "fz", "vec-scatter", {"vec-scatter"}, name)
    words = HOSTILE[name][1]
    if words is None:
        assert hasattr(got, "meta"), got
    else:
        assert not hasattr(got, "meta") and got.path == d / "submission.json", got
        assert words in f"{got.field} {got.reason}", got


def test_hostile_submissions_are_planned_collected_and_scored_beside_the_good_one(tmp_path):
    """Before: the 200 kB nested file raised RecursionError and no campaign was planned; a NUL in a
    short field stopped collect (HDF5 strings end at NUL)."""
    tree = hostile_tree(tmp_path / "tree")
    opts = RunOptions(submissions=str(tree), problems="vec-scatter")
    planned = plan_campaign(tmp_path / "c", load_site("local"), opts)
    rejected = {Path(r.path).parent.name for r in planned.gathered.rejected}
    assert rejected == {n for n, (_, w) in HOSTILE.items() if w is not None}
    jobs = {j.attempt for j in planned.plan.jobs if j.agent == "fz"}
    assert jobs == {"escape-in-model", "many-keys", "good"}
    counts = store.collect(planned.campaign)
    assert counts["submissions"] == 5 and not counts["unreadable"]  # 4 of fz + the reference
    sid, scores = scoring.score(planned.campaign.h5_path)
    assert len(scores) == 5
    manifest = json.loads((tmp_path / "c" / "campaign.json").read_text())
    assert len(manifest["rejected"]) == len(rejected)


def test_the_cli_plans_the_rest_and_names_the_nested_file(tmp_path):
    tree = hostile_tree(tmp_path / "tree")
    proc = hpcbench("submit", "--dry-run", "--submissions", str(tree), "--problems", "vec-scatter",
                    "--out", str(tmp_path / "c"), check=False)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "deep-list/submission.json: nests arrays or objects deeper than 32 levels" in proc.stderr
    assert "fz__vec-scatter__good" in proc.stdout


# ------------------------------------------------------------------------------------------ full disk

def _mount_tmpfs(path: Path, size: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {proc.stderr.decode().strip()}")


@pytest.mark.petsc
@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
def test_a_full_disk_stops_the_run_naming_the_file_system_and_run_resumes(tmp_path):
    """Before: the driver died with a traceback from a lease write and builds that ran out of room
    were recorded as the program's compilation failure."""
    mnt = tmp_path / "small"
    _mount_tmpfs(mnt, "700k")  # full before the quick campaign's seven jobs have all finished
    try:
        out = mnt / "c"
        args = ("run", "--profile", str(QUICK), "--problems", "vec-scatter,rosenbrock", "--out", str(out),
                "--held-out-seed", "1")
        first = hpcbench(*args, check=False)
        assert first.returncode == 2, first.stderr
        assert "Traceback" not in first.stderr
        assert f"the file system at {mnt} (holding " in first.stderr and "is full" in first.stderr
        assert "kept: the plan" in first.stderr and "rerun the same command to resume" in first.stderr
        kept = {p.name: json.loads(p.read_text()) for p in (out / "records").glob("*.json")}
        assert len(kept) < 7
        # A build or run cut short by the full disk left no record to be mistaken for the program's.
        # Which jobs finish before the disk fills depends on timing (a reference job may): what is
        # kept must carry no trace of the disk, and every kept reference record must be whole.
        for rec in kept.values():
            text = json.dumps(rec)
            assert "No space left" not in text and "errno = 28" not in text, rec["job_id"]
            if rec["agent"] == "reference":
                assert rec["build"] is not None and rec["build"]["exit_code"] == 0, \
                    (rec["job_id"], rec["status"], rec.get("reason"))
                assert all(r["exit_code"] == 0 and not r["timed_out"] for r in rec["runs"]), rec["job_id"]
        subprocess.run(["mount", "-o", "remount,size=16m", str(mnt)], check=True)
        second = hpcbench(*args, check=False)
        assert second.returncode == 0, second.stderr
        assert f"{len(kept)} already done" in second.stderr
        rows = json.loads(hpcbench("report", str(out), "--format", "json").stdout)["submissions"]
        by = {(r["agent"], r["problem"]): r for r in rows}
        assert by[("reference", "vec-scatter")]["stop_reason"] == "complete"
        assert by[("reference", "rosenbrock")]["stop_reason"] == "complete"
        assert by[("sloppy-coder", "vec-scatter")]["stop_reason"] == "build failed"  # its own, genuine
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


class _LeastFree(threading.Thread):
    """The least free space a file system had while it ran (statvfs every millisecond: a fallocate
    between two of the harness's 0.2 s checks holds its blocks for up to 0.2 s)."""

    def __init__(self, path: Path):
        super().__init__(daemon=True)
        self.path, self.stop, self.samples = path, threading.Event(), 0
        st = os.statvfs(path)
        self.total, self.least = st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize

    def run(self) -> None:
        while not self.stop.wait(0.001):
            st = os.statvfs(self.path)
            self.least = min(self.least, st.f_bavail * st.f_frsize)
            self.samples += 1

    def __enter__(self) -> _LeastFree:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.join()


FALLOCATE_BOMB_C = r"""
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
int main(void)
{
  char name[32];
  long size = 60L << 20; /* under the file size limit; smaller and smaller until not a block is left */
  for (int i = 0; i < 400 && size >= 4096; i++) {
    snprintf(name, sizeof name, "f%d", i);
    int fd = open(name, O_CREAT | O_WRONLY, 0600);
    if (fd < 0) break;
    if (posix_fallocate(fd, 0, size) != 0) size /= 2;
    close(fd);
  }
  sleep(3); /* holding the disk full while the other jobs run */
  return 0;
}
"""


@pytest.mark.petsc
@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
def test_a_fallocate_bomb_is_over_its_own_disk_limit_and_the_reference_beside_it_scores(tmp_path):
    """Before: fallocate took the file system in one call between two 0.2 s disk checks, the
    bomb's files stayed until its job ended, its own record and the jobs beside it failed for
    want of room, and the whole campaign stopped (the suggested resume filled it again). Then:
    its files were freed at the next check, but for up to 0.2 s it held the file system."""
    from tests.clusters import rosenbrock_tree
    from tests.conftest import profile_file

    mnt = tmp_path / "small"
    _mount_tmpfs(mnt, "150m")
    site = tmp_path / "site.json"
    site.write_text(json.dumps({
        "name": "small-disk", "scheduler": "local", "isolation": "bwrap",
        "launcher": {"template": "mpiexec -n {ranks}", "oversubscribe_flag": "--oversubscribe"},
        "variants": [{"name": "cpu", "petsc_dir": "auto"}],
        "limits": {"cpu_s": 600, "memory_mb": 4096, "file_size_mb": 64, "disk_mb": 16, "inodes": 2000,
                   "processes": 256, "output_bytes": 1 << 20, "flood_bytes": 64 << 20}}))
    tree = rosenbrock_tree(tmp_path / "tree", "bomber", FALLOCATE_BOMB_C)
    once = profile_file("quick-stop-at-failure", stop_at_failure=True)  # one fill of the disk, not one per case
    try:
        args = ("run", "--profile", str(once), "--agent", "reference", "--submissions", str(tree), "--problems",
                "rosenbrock", "--site", str(site), "--out", str(mnt / "c"), "--held-out-seed", "1")
        with _LeastFree(mnt) as seen:  # the file system's free space, sampled every millisecond
            first = hpcbench(*args, check=False)
        # the bomb's blocks are a tmpfs of its disk limit in its sandbox (jobs/disk_cap.py): at no
        # moment did the campaign's file system lose even that much, the reference's work included
        assert seen.total - seen.least < 16 << 20, (seen.total, seen.least, seen.samples)
        assert first.returncode in (0, 1), first.stderr  # 1: the bomb's gates failed, nothing else
        assert "Traceback" not in first.stderr and "is full" not in first.stderr, first.stderr
        rows = {r["agent"]: r for r in json.loads(hpcbench("report", str(mnt / "c"), "--format", "json").stdout)[
            "submissions"]}
        assert rows["reference"]["stop_reason"] == "complete", rows["reference"]
        rec = json.loads(next((mnt / "c" / "records").glob("bomber__*.json")).read_text())
        assert rec["runs"] and rec["runs"][0]["stopped_reason"] == "disk limit 16 MB", rec["runs"][0]
        assert rec["runs"][0]["disk_limit"] == "kernel (tmpfs)" and rec["build"]["disk_limit"] == "kernel (tmpfs)"
        free, total, _ = os.statvfs(mnt).f_bavail, os.statvfs(mnt).f_blocks, None
        assert free > 0.8 * total  # the bomb's files went with its run
        again = hpcbench(*args, check=False)  # the resume reruns nothing: the bomb has its record
        assert again.returncode == first.returncode and "2 already done" in again.stderr, again.stderr
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
def test_a_job_that_met_a_full_disk_runs_again_once_there_is_room_and_a_disk_that_stays_full_stops(tmp_path,
                                                                                                  monkeypatch):
    from types import SimpleNamespace

    from hpcbench.jobs.diskfull import FullJobs

    mnt = tmp_path / "small"
    _mount_tmpfs(mnt, "4m")
    try:
        job = SimpleNamespace(job_id="a__vec-scatter__1", work_dir=str(mnt / "work" / "a"))
        hog = mnt / "hog"
        with open(hog, "wb") as f:
            os.posix_fallocate(f.fileno(), 0, (4 << 20) - 8192)
        # a step's own "No space left on device" counts only where room is low (here: yes); on a
        # roomy file system the words are the program's to print (`#error No space left ...`)
        from hpcbench.jobs.diskfull import is_low
        assert is_low(mnt) and not is_low(tmp_path)
        full = FullJobs()
        full.add(job, job)
        assert full.with_room() == [] and full.stuck() is None  # waits for room a while
        hog.unlink()  # another step's files freed
        assert full.with_room() == [job] and not full.waiting
        for _ in range(FullJobs.RETRIES - 1):  # the first came back above
            full.add(job, job)
            assert full.with_room() == [job]
        full.add(job, job)  # the same job met it once more than it may: the run stops
        assert full.with_room() == [] and "at each of its 3 tries" in full.stuck()[1]
        other = SimpleNamespace(job_id="b__vec-scatter__1", work_dir=job.work_dir)
        monkeypatch.setattr(FullJobs, "ROOM_WAIT_S", 0.0)
        with open(hog, "wb") as f:
            os.posix_fallocate(f.fileno(), 0, (4 << 20) - 8192)
        stays = FullJobs()
        stays.add(other, other)
        assert stays.with_room() == [] and "no room came back within 0 s" in stays.stuck()[1]
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


# ------------------------------------------------------------------------------------ damaged stores

def _sealed_campaign(root: Path) -> tuple[Path, str]:
    """A planned, collected and scored campaign (no job run: the store is what matters here)."""
    planned = plan_campaign(root, load_site("local"), RunOptions(problems="vec-scatter,rosenbrock"))
    store.collect(planned.campaign)
    sid, _ = scoring.score(planned.campaign.h5_path)
    return planned.campaign.root, sid


def _overwrite(path: Path, where: float, n: int) -> None:
    data = bytearray(path.read_bytes())
    at = int(len(data) * where)
    data[at:at + n] = os.urandom(min(n, len(data) - at))
    path.write_bytes(bytes(data))


DAMAGE = {
    "truncated": lambda p: p.write_bytes(p.read_bytes()[:4000]),
    "empty": lambda p: p.write_bytes(b""),
    "not-hdf5": lambda p: p.write_text("garbage\n"),
    "middle-overwritten": lambda p: _overwrite(p, 0.5, 4096),  # collect once called this "unchanged"
    "tail-overwritten": lambda p: _overwrite(p, 0.9, 3000),
}


@pytest.fixture(scope="module")
def sealed(tmp_path_factory):
    return _sealed_campaign(tmp_path_factory.mktemp("sealed") / "c")


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_a_damaged_campaign_h5_is_named_with_what_to_do_and_collect_rebuilds_it(sealed, tmp_path, kind):
    import shutil

    src, sid = sealed
    camp = tmp_path / "c"
    shutil.copytree(src, camp)
    DAMAGE[kind](camp / "campaign.h5")
    for verb in (["score", str(camp)], ["report", str(camp), "--format", "json"],
                 ["explain", str(camp), f"/scores/{sid}/reference/vec-scatter/1"],
                 ["explain", str(camp), "/submissions/reference/rosenbrock/1"]):
        p = hpcbench(*verb, check=False)
        assert p.returncode == 2 and "Traceback" not in p.stderr, (verb, p.stderr)
        assert f"{camp / 'campaign.h5'}: damaged" in p.stderr and f"hpcbench collect {camp}" in p.stderr, p.stderr
    p = hpcbench("collect", str(camp), check=False)
    assert p.returncode == 0 and "was damaged" in p.stderr and "rebuilt from the records" in p.stderr, p.stderr
    assert list(camp.glob("campaign.damaged-*.h5"))  # kept for a post-mortem
    assert "4 added" in p.stdout or "added" in p.stdout
    assert hpcbench("report", str(camp), "--format", "json").returncode == 0


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_a_damaged_scoring_is_listed_and_skipped(sealed, tmp_path, kind):
    import shutil

    src, sid = sealed
    camp = tmp_path / "c"
    shutil.copytree(src, camp)
    second = hpcbench("score", str(camp), "--scoring-id", "second", check=False)  # exit 1: no job ran
    assert "scoring second:" in second.stdout, second.stderr
    DAMAGE[kind](camp / "scores" / "second.h5")
    p = hpcbench("report", str(camp), "--format", "json", check=False)  # "second" was the latest
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert f"skipped damaged scoring {camp / 'scores' / 'second.h5'}" in p.stderr
    assert json.loads(p.stdout)["scoring_id"] == sid
    p = hpcbench("explain", str(camp), "/scores/second/reference/vec-scatter/1", check=False)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "second.h5: damaged" in p.stderr and "writes a new scoring" in p.stderr, p.stderr
    # the only scoring damaged: named, never "no scoring yet"
    DAMAGE[kind](camp / "scores" / f"{sid}.h5")
    p = hpcbench("report", str(camp), check=False)
    assert p.returncode == 2 and "no usable scoring" in p.stderr and "no scoring yet" not in p.stderr, p.stderr


# ------------------------------------------------------------------------------------ received stores

def _canary(tmp: Path) -> tuple[Path, Path, bytes]:
    """A file of the operator's that a crafted store would pull in (its text and an HDF5 copy)."""
    text = f"CANARY-{os.urandom(8).hex()}".encode()
    raw = tmp / "operator-secret.txt"
    raw.write_bytes(text * 64)
    h5 = tmp / "operator-secret.h5"
    with h5py.File(h5, "w") as f:
        f["texts"] = np.frombuffer(raw.read_bytes(), dtype="u1")
    return raw, h5, text


def _external_storage(f, raw: Path, h5: Path) -> None:
    del f["texts"]
    f.create_dataset("texts", shape=(raw.stat().st_size,), dtype="u1", external=[(str(raw), 0, raw.stat().st_size)])


def _virtual(f, raw: Path, h5: Path) -> None:
    n = raw.stat().st_size
    layout = h5py.VirtualLayout(shape=(n,), dtype="u1")
    layout[:] = h5py.VirtualSource(str(h5), "texts", shape=(n,))
    del f["texts"]
    f.create_virtual_dataset("texts", layout)


def _external_link(f, raw: Path, h5: Path) -> None:
    del f["texts"]
    f["texts"] = h5py.ExternalLink(str(h5), "/texts")


CRAFTED = {"external-storage": _external_storage, "virtual-dataset": _virtual, "external-link": _external_link}


@pytest.mark.parametrize("kind", sorted(CRAFTED))
def test_a_received_store_that_reads_other_files_is_refused_and_rebuilt(sealed, tmp_path, kind):
    """The sender rewrote the checksum sidecar, so the checksum holds: the store is refused for
    what it is, by every command that reads it, and the operator's file never reaches an output."""
    import shutil

    src, sid = sealed
    camp = tmp_path / "c"
    shutil.copytree(src, camp)
    raw, h5, canary = _canary(tmp_path)
    for store_file in (camp / "campaign.h5", camp / "scores" / f"{sid}.h5"):  # both have a /texts
        with h5py.File(store_file, "a") as f:
            CRAFTED[kind](f, raw, h5)
        integrity.seal(store_file)
    outputs = []
    for verb in (["report", str(camp), "--format", "json"], ["report", str(camp), "--format", "html", "--out",
                                                               str(tmp_path / "r.html")],
                 ["explain", str(camp), "/submissions/reference/rosenbrock/1"], ["compare", str(camp), str(src)],
                 ["view", str(camp), "--port", "0"]):
        p = hpcbench(*verb, check=False)
        outputs += [p.stdout, p.stderr]
        assert p.returncode == 2 and "Traceback" not in p.stderr, (verb, p.stdout, p.stderr)
        assert "/texts" in p.stderr and "refused" in p.stderr, (verb, p.stderr)
    p = hpcbench("collect", str(camp), check=False)
    outputs += [p.stdout, p.stderr]
    assert p.returncode == 0 and "/texts" in p.stderr and "rebuilt from the records" in p.stderr, p.stderr
    p = hpcbench("score", str(camp), check=False)  # exit 1: no job ran; a new scoring, the crafted one skipped
    outputs += [p.stdout, p.stderr]
    assert "Traceback" not in p.stderr and "scoring " in p.stdout, p.stderr
    p = hpcbench("report", str(camp), "--format", "json")
    outputs += [p.stdout, p.stderr]
    assert "skipped damaged scoring" in p.stderr and f"{sid}.h5" in p.stderr
    written = [q.read_bytes() for q in tmp_path.rglob("*") if q.is_file() and q not in (raw, h5)
               and not q.name.startswith("campaign.damaged-")]
    assert not any(canary.decode() in o for o in outputs)
    assert not any(canary in b for b in written)


def test_a_job_that_exits_for_a_full_disk_between_two_looks_of_the_driver_is_never_recorded(tmp_path):
    """Before: the local driver looked for EXIT_DISK_FULL, then reaped; a job that exited in
    between was recorded as "job process exited 75 without a record", an error with no build,
    counted against the program (CI on stop 44: a kept reference record without a build)."""
    from types import SimpleNamespace

    from hpcbench.executors.local import LocalExecutor, _Deadlines
    from hpcbench.jobs.diskfull import EXIT_DISK_FULL, FullJobs

    job = SimpleNamespace(job_id="reference__vec-scatter__1", agent="reference", problem="vec-scatter",
                          attempt="1", work_dir=str(tmp_path / "work"), record_path=str(tmp_path / "rec.json"))
    Path(job.work_dir).mkdir()
    proc = subprocess.Popen([sys.executable, "-c", f"raise SystemExit({EXIT_DISK_FULL})"])
    proc.wait()
    ex = LocalExecutor.__new__(LocalExecutor)
    ex.campaign = SimpleNamespace(finished=lambda jid: False)
    running, clock, full = {job.job_id: (proc, job, None)}, _Deadlines(1.0), FullJobs()
    assert ex._reap(running, clock) == 0
    assert not Path(job.record_path).exists() and job.job_id in running
    ex._stop_if_disk_full(running, [], clock, full)  # the next turn of the loop
    assert not running and not Path(job.record_path).exists()
    # A job that could not even say so (its log's flush at exit failed: Python's status 120)
    # while its file system is full is the file system's too; on a roomy one it is an error.
    died = subprocess.Popen([sys.executable, "-c", "raise SystemExit(120)"])
    died.wait()
    assert ex._reap({job.job_id: (died, job, None)}, clock) == 1 and Path(job.record_path).is_file()
    Path(job.record_path).unlink()
    mnt = tmp_path / "small"
    _mount_tmpfs(mnt, "1m")
    try:
        job.work_dir = str(mnt / "work")
        Path(job.work_dir).mkdir()
        with open(mnt / "hog", "wb") as f:
            os.posix_fallocate(f.fileno(), 0, (1 << 20) - 8192)
        running = {job.job_id: (died, job, None)}
        assert ex._reap(running, clock) == 0 and job.job_id in running and not Path(job.record_path).exists()
        ex._stop_if_disk_full(running, [], clock, full)
        assert not running and job.job_id in full.waiting
        # stopped by the driver at its wall-time limit: a timeout, full disk or not
        clock.start(job.job_id, died.pid, 0.0)
        clock.termed[job.job_id] = 0.0
        assert ex._reap({job.job_id: (died, job, None)}, clock) == 1
        assert json.loads(Path(job.record_path).read_text())["status"] == "timeout"
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
