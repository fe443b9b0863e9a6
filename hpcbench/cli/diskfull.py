"""A full disk stops a verb with a message naming the file system and what was kept, never a
traceback; rerunning the same command once there is room resumes (jobs with records are not
run again, an unfinished campaign.h5 is rebuilt by the next collect)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from hpcbench.errors import DiskFull
from hpcbench.jobs.diskfull import full_message, is_disk_full_error


def kept(root: Path) -> str:
    """What a campaign folder holds after a stop: what resuming builds on."""
    root = Path(root)
    if not (root / "campaign.json").is_file():
        return f"kept: nothing planned yet in {root}"
    records = len(list((root / "records").glob("*.json"))) if (root / "records").is_dir() else 0
    specs = len(list((root / "specs").glob("*.json"))) if (root / "specs").is_dir() else 0
    lines = [f"kept: the plan ({root}/campaign.json, specs/, snapshot/) and {records} of {specs} job records "
             "(finished jobs are not run again)"]
    scorings = sorted((root / "scores").glob("*.h5")) if (root / "scores").is_dir() else []
    if (root / "campaign.h5").is_file():
        lines.append(f"{root}/campaign.h5 as last collected (a collect cut short is rebuilt by the next one)")
    if scorings:
        lines.append(f"{len(scorings)} earlier scoring(s) in {root}/scores")
    return "; ".join(lines)


@contextlib.contextmanager
def stops_when_full(root: Path | str) -> Iterator[None]:
    """Turn a full file system met anywhere inside into DiskFull naming it and what was kept."""
    try:
        yield
    except DiskFull as e:
        raise DiskFull(f"{e}\n{kept(Path(root))}\nFree space there and rerun the same command to resume.") from None
    except OSError as e:
        if not is_disk_full_error(e):
            raise
        where = Path(e.filename) if isinstance(e.filename, str) else Path(root)
        raise DiskFull(f"{full_message(where, e.strerror or str(e))}\n{kept(Path(root))}\n"
                       "Free space there and rerun the same command to resume.") from None
