"""The leaderboard's uncertainty of a scoring (hpcbench.stats), drawn when the scoring
is written and stored in it as the JSON document `stats` (docs/report.md): the seed and
the number of resamples travel with the numbers, so `hpcbench explain` draws every
interval again and compares. A scoring written before that is analysed when read,
with the default settings, and says so (`stored: false`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from hpcbench.evaluators.categories import CATEGORIES
from hpcbench.score.verdict import passed_from_rows
from hpcbench.stats.analysis import Attempt, analyse_uncertainty
from hpcbench.stats.intervals import Settings
from hpcbench.store.scorings import read_document

DOCUMENT = "stats"


def attempts_from_scores(scores: Iterable) -> list[Attempt]:
    """Attempts that count on the leaderboard (hpcbench.score.scoring.SubmissionScore): every
    attempt at a solvable problem that has a composite (a failed gate or a refusal at 0)."""
    return [Attempt(s.agent, s.problem, s.attempt, float(s.composite), bool(s.correct), dict(s.categories),
                    tuple(s.judge_composites))
            for s in scores if not s.refusal_set and s.composite is not None]


def attempts_from_rows(rows: Iterable[dict]) -> list[Attempt]:
    """The same from a stored scoring's rows (hpcbench.store.scorings.read_scoring)."""
    out = []
    for r in rows:
        if r["refusal_set"] or r["composite"] is None:
            continue
        correct = r["correct"] if r.get("correct") is not None else passed_from_rows(r["gates_passed"],
                                                                                      r["evaluators"])
        out.append(Attempt(r["agent"], r["problem"], r["attempt"], float(r["composite"]), bool(correct),
                           dict(r["categories"]), tuple(r.get("judge_composites") or ())))
    return out


def excluded(rows: Iterable) -> int:
    """Attempts at solvable problems without a composite (problems not scored)."""
    return sum(1 for r in rows if not _get(r, "refusal_set") and _get(r, "composite") is None)


def _get(r: object, k: str) -> object:
    return r[k] if isinstance(r, dict) else getattr(r, k)


def analyse_attempts(attempts: Sequence[Attempt], settings: Settings, sid: str, n_excluded: int = 0) -> dict:
    doc = analyse_uncertainty(attempts, settings, sid, CATEGORIES)
    doc["excluded"] = n_excluded
    return doc


def analyse_scores(scores: Sequence, settings: Settings, sid: str) -> dict:
    return analyse_attempts(attempts_from_scores(scores), settings, sid, excluded(scores))


def settings_of(doc: dict) -> Settings:
    s = doc.get("settings", {})
    return Settings(seed=int(s.get("seed", 0)), resamples=int(s.get("resamples", Settings.resamples)),
                    level=float(s.get("level", Settings.level)), min_units=int(s.get("min_units", Settings.min_units)))


def load_uncertainty(root: Path, sid: str, rows: Sequence[dict]) -> dict:
    """The stored document (`stored: true`), else one analysed now from `rows` (`stored: false`)."""
    text = read_document(root, sid, DOCUMENT)
    if text:
        return {**json.loads(text), "stored": True}
    doc = analyse_attempts(attempts_from_rows(rows), Settings(), sid, excluded(rows))
    return {**doc, "stored": False}
