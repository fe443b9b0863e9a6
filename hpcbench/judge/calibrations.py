"""Where judge calibrations are stored and how a scoring finds the one for its judge
(`hpcbench calibrate` writes them: hpcbench/validation/calibration/; score/judge_trust.py and
the report read them).

    <dir>/results/<model>--<time>.json   one calibration of one judge model"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from hpcbench.errors import HpcbenchError

DIR_ENV = "HPCBENCH_CALIBRATION_DIR"


def calibration_dir(given: str | Path | None = None) -> Path:
    """--dir, else $HPCBENCH_CALIBRATION_DIR, else $XDG_DATA_HOME/hpcbench/calibration."""
    if given:
        return Path(given)
    if os.environ.get(DIR_ENV):
        return Path(os.environ[DIR_ENV])
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "hpcbench" / "calibration"


def results(root: Path | None = None, model: str | None = None) -> list[tuple[Path, dict[str, Any]]]:
    """Stored calibrations, oldest first; an unreadable file is named, never skipped silently."""
    folder = calibration_dir(root) / "results"
    out = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            doc = json.loads(path.read_text())
        except ValueError as e:
            raise HpcbenchError(f"{path}: not a calibration result ({e}); remove or repair it") from None
        if model is None or doc.get("model") == model:
            out.append((path, doc))
    return sorted(out, key=lambda pd: pd[1].get("created", ""))


def lookup(model: str, root: Path | None = None) -> tuple[Path, dict[str, Any]] | None:
    """The latest calibration of `model` in which the judge answered every probe, or None (one
    an older hpcbench stored through a judge outage measured the outage, not the judge)."""
    found = [(p, d) for p, d in results(root, model) if not d.get("judge_stats", {}).get("unscored")]
    return found[-1] if found else None


def trust_summary(path: Path, doc: dict[str, Any]) -> dict[str, Any]:
    """What a scoring by this judge records and applies (hpcbench.score.judge_trust)."""
    return {"file": str(path), "created": doc["created"], "probe_set": doc["probe_set"]["version"],
            "threshold": doc["min_accuracy"], "repeats": doc["repeats"],
            "dimensions": {d: {"prompt_version": doc["prompt_versions"].get(d, ""),
                               **{k: m.get(k) for k in ("accuracy", "detection_rate", "false_alarm_rate", "bias",
                                                        "leakage_rate", "stability", "low_confidence")},
                               "injection_unchanged_rate": (m.get("injection") or {}).get("unchanged_rate")}
                           for d, m in doc["dimensions"].items()}}
