"""Scorings beside the campaign, never inside it: `<campaign>/scores/<id>.h5`,
one small file per scoring, written to a temporary file and linked into place
(link fails if the name exists, so two scorings never overwrite each other and
a killed one leaves no half file). campaign.h5 is not touched by scoring.

A scoring file has attrs (created, hpcbench_version, git_commit of the scorer,
config, weights, store schema) and two tables (docs/store.md):
`submissions` (one row per scored submission, `ev_start`/`ev_n` into
`evaluators`) and `evaluators` (one row per evaluator result), long texts
(rationale, evidence JSON) in the compressed byte array `texts`.

Logical paths keep the report's sources addressable: `/scores/<id>/<agent>/
<problem>/<attempt>` is a row of `submissions`, `.../evaluators/<name>` a row
of `evaluators`."""

from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from hpcbench.errors import HpcbenchError
from hpcbench.store import layout
from hpcbench.store.integrity import StoreDamaged, mismatch, named_damage, open_read, seal, sidecar

# 3: `correct` (every gate and hidden check passed), `judge_composites` (the composite under
# each judge sample) and the `stats` document (hpcbench.score.uncertainty); 2 reads on without them.
SCORE_SCHEMA = 3
_SUB = [("agent", "str"), ("problem", "str"), ("attempt", "str"), ("submission", "str"), ("status", "str"),
        ("failed_gate", "str"), ("tier", "str"), ("left_out", "str"), ("categories", "str"), ("unscored", "str"),
        ("composite", "f8"), ("gates_passed", "?"), ("partial", "?"), ("refused", "?"), ("refusal_set", "?"),
        ("ev_start", "i8"), ("ev_n", "i4"), ("correct", "?"), ("judge_composites", "str")]
_EV = [("row", "i8"), ("evaluator", "str"), ("stage", "str"), ("category", "str"), ("status", "str"),
       ("method", "str"), ("judge_model", "str"), ("prompt_version", "str"), ("score", "f8"), ("confidence", "f8"),
       ("passed", "i1"), ("prompt_tokens", "i8"), ("completion_tokens", "i8"), ("cost_usd", "f8"),
       ("rationale", "text"), ("evidence", "text")]
SCORING_TABLES = {"submissions": _SUB, "evaluators": _EV}


def _dtype(cols: list[tuple[str, str]]) -> np.dtype:
    out: list[tuple[str, object]] = []
    for n, k in cols:
        out += [(f"{n}_off", "i8"), (f"{n}_len", "i8")] if k == "text" else [(n, layout.STR if k == "str" else k)]
    return np.dtype(out)


_s = layout.text  # a string cell as h5py returns it


_nan = layout.nan_to_none


def scores_dir(root: Path) -> Path:
    return Path(root) / "scores"


def scoring_path(root: Path, sid: str) -> Path:
    if not sid or "/" in sid or sid.startswith("."):
        raise HpcbenchError(f"scoring id {sid!r}: must be a plain name (no '/', not starting with '.')")
    return scores_dir(root) / f"{sid}.h5"


def _check(p: Path) -> tuple[str, str]:
    """(created, "") for a sound scoring file, ("", why) for a damaged one."""
    why = mismatch(p)
    if why:
        return "", why
    try:
        with h5py.File(p, "r") as f:
            if "submissions" not in f or "evaluators" not in f:
                return "", "its tables are missing"
            return _s(f.attrs.get("created", "")), ""
    except (OSError, KeyError, ValueError) as e:
        return "", str(e).splitlines()[0][:200]


def scan_scorings(root: Path) -> tuple[dict[str, str], dict[str, str]]:
    """({scoring id: created} of the sound scorings, {path: why} of the damaged ones). Scorings are
    written to a hidden temporary name and linked into place complete, so every scores/*.h5 that
    fails its checksum or does not open is damage, not work in progress."""
    out, bad = {}, {}
    for p in sorted(scores_dir(root).glob("*.h5")):
        created, why = _check(p)
        if why:
            bad[str(p)] = why
        else:
            out[p.stem] = created
    return out, bad


def list_scorings(root: Path) -> dict[str, str]:
    """{scoring id: created} of the sound scorings (damaged ones: scan_scorings)."""
    return scan_scorings(root)[0]


def damaged_note(root: Path) -> str:
    """One line per damaged scoring, saying it is skipped and what to do ("" when none is)."""
    bad = scan_scorings(root)[1]
    return "\n".join(f"skipped damaged scoring {p} ({why}); the others are intact, and "
                     f"`hpcbench score {root}` writes a new one" for p, why in bad.items())


def latest(root: Path) -> str:
    have, bad = scan_scorings(root)
    if not have:
        if bad:
            damaged = "; ".join(f"{p} is damaged ({w})" for p, w in bad.items())
            raise LookupError(f"{root}: no usable scoring: {damaged}. Run `hpcbench score {root}` for a new one")
        raise LookupError(f"{root}: no scoring yet; run `hpcbench score {root}`")
    # by creation time, not by name: `--scoring-id` names need not sort like timestamps
    return max(have, key=lambda k: (have[k], k))


def write_scoring(root: Path, sid: str, scores: list, attrs: dict, documents: dict[str, str] | None = None) -> Path:
    """scores: hpcbench.score.scoring.SubmissionScore list; `documents`: name -> JSON text,
    each stored as its own byte dataset (the `stats` of hpcbench.score.uncertainty).
    Returns the file written."""
    final = scoring_path(root, sid)
    if final.exists():
        raise FileExistsError(f"{final}: scoring {sid!r} exists; scorings are never overwritten")
    final.parent.mkdir(parents=True, exist_ok=True)
    parts: list[bytes] = []
    pos = 0

    def text(s: str) -> tuple[int, int]:
        nonlocal pos
        b = s.encode("utf-8", errors="replace")
        parts.append(b)
        pos += len(b)
        return pos - len(b), len(b)

    subs: list[tuple[Any, ...]] = []
    evs: list[tuple[Any, ...]] = []
    for i, sc in enumerate(scores):
        subs.append((sc.agent, sc.problem, sc.attempt, sc.h5_path, sc.status, sc.failed_gate, sc.tier,
                     json.dumps(sc.left_out), json.dumps(sc.categories), json.dumps(sc.unscored),
                     np.nan if sc.composite is None else sc.composite, sc.gates_passed, sc.partial, sc.refused,
                     sc.refusal_set, len(evs), len(sc.results), sc.correct, json.dumps(sc.judge_composites)))
        for r in sc.results:
            evs.append((i, r.evaluator, r.stage, r.category, r.status, r.method, r.judge_model or "",
                        r.prompt_version or "", np.nan if r.score is None else r.score, r.confidence,
                        -1 if r.passed is None else int(r.passed), r.prompt_tokens or 0, r.completion_tokens or 0,
                        r.cost_usd or 0.0, *text(r.rationale or ""), *text(json.dumps(r.evidence, default=str))))
    tmp = final.with_name(f".{sid}.{os.getpid()}.tmp")
    try:
        with h5py.File(tmp, "w") as f:
            f.attrs.update(score_schema=SCORE_SCHEMA, store_schema=layout.SCHEMA_VERSION, **attrs)
            for name, rows, cols in (("submissions", subs, _SUB), ("evaluators", evs, _EV)):
                f.create_dataset(name, data=np.array(rows, dtype=_dtype(cols)), chunks=True,
                                 **layout.filters(_dtype(cols)))
            f.create_dataset("texts", data=np.frombuffer(b"".join(parts) or b"\0", dtype="u1"), chunks=True,
                             **layout.filters("u1"))
            for name, doc in (documents or {}).items():
                f.create_dataset(name, data=np.frombuffer(doc.encode() or b"\0", dtype="u1"), chunks=True,
                                 **layout.filters("u1"))
        seal(tmp)  # the sidecar names the final file; written before the link, so never missing after it
        os.replace(sidecar(tmp), sidecar(final))
        try:
            os.link(tmp, final)  # fails if another scoring took the name meanwhile: nothing is overwritten
        except FileExistsError:
            sidecar(final).unlink(missing_ok=True)
            raise
    finally:
        tmp.unlink(missing_ok=True)
        sidecar(tmp).unlink(missing_ok=True)
    return final


def _damage_remedy(root: Path) -> str:
    return f"it is skipped: `hpcbench score {root}` writes a new scoring (the others are intact)"


def scoring_config(root: Path, sid: str) -> dict:
    """A scoring's config attribute alone (which judge), without reading its tables."""
    path = scoring_path(root, sid)
    with named_damage(path, _damage_remedy(root)), open_read(path) as f:
        return json.loads(_s(f.attrs.get("config", "{}")) or "{}")


@dataclass
class Scoring:
    sid: str
    path: Path
    attrs: dict
    rows: list[dict] = field(default_factory=list)

    @property
    def config(self) -> dict:
        return json.loads(self.attrs.get("config", "{}") or "{}")

    @property
    def weights(self) -> dict[str, float]:
        return json.loads(self.attrs.get("weights", "{}") or "{}")

    def row(self, agent: str, problem: str, attempt: str) -> dict | None:
        return next((r for r in self.rows if (r["agent"], r["problem"], r["attempt"]) == (agent, problem, attempt)),
                    None)


def read_scoring(root: Path, sid: str | None = None, evidence: bool = False) -> Scoring:
    """One scoring as rows: submission fields plus `evaluators` {name: fields}."""
    sid = sid or latest(root)
    path = scoring_path(root, sid)
    if not path.is_file():
        raise LookupError(f"{root}: no scoring {sid!r}; have {sorted(list_scorings(root))}")
    why = mismatch(path)
    if why:
        raise StoreDamaged(f"{path}: damaged ({why}); {_damage_remedy(root)}")
    with named_damage(path, _damage_remedy(root)), open_read(path) as f:
        attrs = {k: _s(v) if isinstance(v, (bytes, str)) else v.item() if hasattr(v, "item") else v
                 for k, v in f.attrs.items()}
        subs = f["submissions"][()]
        evs = f["evaluators"][()]
        buf = f["texts"][()].tobytes()
    def text(o: int, n: int) -> str:
        return buf[o:o + n].decode("utf-8", errors="replace") if n else ""

    out = Scoring(sid, path, attrs)
    for s in subs:
        base = f"/scores/{sid}/{_s(s['agent'])}/{_s(s['problem'])}/{_s(s['attempt'])}"
        row: dict[str, Any] = {k: _s(s[k]) for k in ("agent", "problem", "attempt", "submission", "status",
                                                      "failed_gate", "tier")}
        row.update({k: json.loads(_s(s[k])) for k in ("left_out", "categories", "unscored")})
        row.update(composite=_nan(s["composite"]), gates_passed=bool(s["gates_passed"]), partial=bool(s["partial"]),
                   refused=bool(s["refused"]), refusal_set=bool(s["refusal_set"]), source=base, evaluators={})
        newer = "correct" in (s.dtype.names or ())  # schema 3; older rows say None (score.verdict derives it)
        row["judge_composites"] = json.loads(_s(s["judge_composites"]) or "[]") if newer else []
        for e in evs[s["ev_start"]:s["ev_start"] + s["ev_n"]]:
            name = _s(e["evaluator"])
            d: dict[str, Any] = {k: _s(e[k]) for k in ("stage", "category", "status", "method", "judge_model",
                                                        "prompt_version")}
            d.update(score=_nan(e["score"]), confidence=float(e["confidence"]),
                     passed=None if e["passed"] < 0 else bool(e["passed"]), prompt_tokens=int(e["prompt_tokens"]),
                     completion_tokens=int(e["completion_tokens"]), cost_usd=float(e["cost_usd"]),
                     rationale=text(e["rationale_off"], e["rationale_len"]), source=f"{base}/evaluators/{name}")
            if evidence:
                d["evidence"] = json.loads(text(e["evidence_off"], e["evidence_len"]) or "null")
            row["evaluators"][name] = d
        row["correct"] = bool(s["correct"]) if newer else None
        out.rows.append(row)
    return out


def read_document(root: Path, sid: str, name: str) -> str | None:
    """A JSON document stored with a scoring (`stats`), or None in a scoring without it."""
    with open_read(scoring_path(root, sid)) as f:
        if name not in f:
            return None
        return f[name][()].tobytes().rstrip(b"\0").decode("utf-8", errors="replace")


def row_index(root: Path, sid: str) -> dict[str, int]:
    """{logical submission path: its row} of a scoring (read_evidence's `row`), one column read."""
    path = scoring_path(root, sid)
    with named_damage(path, _damage_remedy(root)), open_read(path) as f:
        subs = f["submissions"].fields(["submission"])[()]
    return {_s(x): i for i, x in enumerate(subs)}


def read_evidence(root: Path, sid: str, row: int) -> dict[str, Any]:
    """{evaluator: evidence} of the `row`-th submission of a scoring, reading only its rows and
    texts (a results browser's page, at any scoring size)."""
    path = scoring_path(root, sid)
    with named_damage(path, _damage_remedy(root)), open_read(path) as f:
        s = f["submissions"][row]
        evs = f["evaluators"][int(s["ev_start"]):int(s["ev_start"]) + int(s["ev_n"])]
        texts = f["texts"]
        out = {}
        for e in evs:
            o, n = int(e["evidence_off"]), int(e["evidence_len"])
            out[_s(e["evaluator"])] = json.loads(texts[o:o + n].tobytes().decode("utf-8", errors="replace")
                                                 if n else "null")
    return out


def created_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def frame(root: Path, sid: str | None = None, level: str = "evaluators"):
    """A scoring as one pandas DataFrame: `level="evaluators"` one row per (submission,
    evaluator) with score, confidence, status, method, rationale and its explain path;
    `level="submissions"` one row per submission with its composite, tier and categories
    as columns `cat_<name>`. `attempt` is a string, as in every table of the store."""
    import pandas as pd

    sc = read_scoring(Path(root), sid)
    keys = ("agent", "problem", "attempt", "submission")
    if level == "submissions":
        rows = [{**{k: r[k] for k in (*keys, "status", "failed_gate", "tier", "composite", "gates_passed",
                                       "partial", "refused", "refusal_set", "correct", "source")},
                 **{f"cat_{c}": v for c, v in r["categories"].items()}} for r in sc.rows]
    elif level == "evaluators":
        rows = [{**{k: r[k] for k in keys}, "evaluator": n,
                 **{k: e[k] for k in ("stage", "category", "status", "score", "confidence", "passed", "method",
                                      "judge_model", "prompt_version", "cost_usd", "rationale", "source")}}
                for r in sc.rows for n, e in r["evaluators"].items()]
    else:
        raise ValueError(f"level must be 'evaluators' or 'submissions', not {level!r}")
    df = pd.DataFrame(rows)
    if len(df):
        df["attempt"] = df["attempt"].astype("string")
    df.attrs.update(scoring=sc.sid, path=str(sc.path))
    return df
