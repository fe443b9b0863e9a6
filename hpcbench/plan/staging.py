"""Staged submissions: the exact bytes an agent sent, read-only, with a sha256 per file.

`plan` copies each validated submission into `<campaign>/submissions/<agent>/<problem>/<attempt>/`
and writes `.staged.json` beside it: the sha256 of every file (and of the staged
submission.json) taken while copying. `collect` calls `checked_record`: a file that no
longer matches (a job that wrote into its own staged source) fails that submission with
"source changed after staging", so campaign.h5 never scores sources the agent did not send.

Read-only modes stop an unprivileged job; they do not stop root, which is why the
hashes are checked, and why the sandbox shows a job none of this folder."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
from pathlib import Path

from hpcbench.jobs.records import JobResult, write_atomic
from hpcbench.submission import MAX_FILE_BYTES, MAX_META_BYTES, LoadedSubmission, Submission, read_untrusted

MANIFEST = ".staged.json"
SCHEMA = 1


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _make_writable(tree: Path) -> None:
    """Restaging replaces a read-only tree; an unprivileged owner needs write bits on its folders first."""
    for dirpath, dirnames, _ in os.walk(tree):
        os.chmod(dirpath, 0o755)
        for d in dirnames:
            p = os.path.join(dirpath, d)
            if not os.path.islink(p):
                os.chmod(p, 0o755)


def _remove(tree: Path) -> None:
    if tree.is_symlink() or tree.is_file():
        tree.unlink()
    elif tree.exists():
        _make_writable(tree)
        shutil.rmtree(tree)


def stage(sub: LoadedSubmission, dest: Path) -> bool:
    """Copy exactly the declared files (read again without following links, as at loading)
    and the metadata into `dest`, read-only, and record their sha256s in .staged.json.
    Returns False when `dest` already holds exactly these bytes (left untouched, so a job
    still reading it is not disturbed), True when it was (re)written."""
    m = sub.meta
    files = {name: read_untrusted(sub.folder, name, MAX_FILE_BYTES) for name in (m.files if not m.refused else [])}
    meta = m.model_dump_json(indent=1)
    hashes = {name: sha256(data) for name, data in files.items()}
    hashes["submission.json"] = sha256(meta.encode())
    if dest.is_dir() and not dest.is_symlink() and _staged_hashes(dest) == hashes and not verify(dest):
        return False
    _remove(dest)
    dest.mkdir(parents=True)
    for name, data in files.items():
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_bytes(data)
    write_atomic(dest / "submission.json", meta)
    write_atomic(dest / MANIFEST, json.dumps({
        "schema": SCHEMA, "sha256": hashes,
        "staged": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}, indent=1))
    _read_only(dest)
    return True


def staged_hashes(folder: Path) -> dict[str, str]:
    """The sha256 of every staged file of `folder` ({} when it has no readable manifest)."""
    return _staged_hashes(folder) or {}


def _staged_hashes(folder: Path) -> dict[str, str] | None:
    try:
        return dict(json.loads(read_untrusted(folder, MANIFEST, MAX_META_BYTES))["sha256"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _read_only(tree: Path) -> None:
    for dirpath, dirnames, filenames in os.walk(tree, topdown=False):
        for f in filenames:
            os.chmod(os.path.join(dirpath, f), 0o444)
        for d in dirnames:
            os.chmod(os.path.join(dirpath, d), 0o555)
    os.chmod(tree, 0o555)


def verify(folder: Path) -> list[str]:
    """What no longer matches the hashes taken at staging ([] when everything does)."""
    if not (folder / MANIFEST).exists():
        return [f"{MANIFEST} (the staging record) is missing"]
    expected = _staged_hashes(folder)
    if expected is None:
        return [f"{MANIFEST} (the staging record) is unreadable"]
    problems = []
    for name, want in sorted(expected.items()):
        limit = MAX_META_BYTES if name == "submission.json" else MAX_FILE_BYTES
        try:
            got = sha256(read_untrusted(folder, name, limit))
        except FileNotFoundError:
            problems.append(f"{name} was removed")
            continue
        except (OSError, ValueError) as e:
            problems.append(f"{name}: {e}")
            continue
        if got != want:
            problems.append(f"{name} differs (sha256 {got[:12]}, staged {want[:12]})")
    return problems


def checked_record(folder: Path, sub: Submission, rec: JobResult | None, required: bool) -> JobResult | None:
    """`rec`, or an error record saying the staged source changed: the submission then fails
    its first gate instead of being scored on sources the agent never sent. `required`: the
    campaign was staged with hashes (campaigns from before have none to check)."""
    if not required and not (folder / MANIFEST).exists():
        return rec
    problems = verify(folder)
    if not problems:
        return rec
    return JobResult(job_id=rec.job_id if rec else f"{sub.agent}__{sub.problem}__{sub.attempt}",
                     agent=sub.agent, problem=sub.problem, attempt=sub.attempt, status="error",
                     reason="source changed after staging: " + "; ".join(problems),
                     hostname=rec.hostname if rec else "", started=rec.started if rec else "",
                     finished=rec.finished if rec else "")
