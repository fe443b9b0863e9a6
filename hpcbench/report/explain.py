"""`hpcbench explain CAMPAIGN PATH`: the value at a logical path of the campaign
and how it was derived, so any number in a report can be traced and re-derived.

Paths are those the reports print; they name rows of the store's tables
(docs/store.md) as if they were groups:

- `/scores/<id>/<agent>/<problem>/<attempt>[/evaluators/<name>]`: a row of the
  scoring file scores/<id>.h5 (its submissions or evaluators table)
- `/submissions/<agent>/<problem>/<attempt>[/build|/runs/<NNN>|/sources/<file>|
  /timings][/stdout|/stderr|...]`: rows of campaign.h5's tables and their texts
- `/tables/<name>`, `/manifest`, `/problems`, `/petsc`: campaign.h5's datasets as stored

optionally `@attr` for one field and `.key` into a JSON field
(`<submission>@submission_json.generation`); `*` matches one path component
(`/scores/<id>/*/rosenbrock/*@composite`).

- a scoring, an agent or a problem under /scores: the aggregate the leaderboard
  and per-problem tables show, recomputed from the submissions it averages
- a submission's score: its gates, each category's confidence-weighted mean of
  its evaluators, the weights and the renormalised composite, recomputed and
  compared with the stored value
- an evaluator: score, confidence, method, judge model and prompt version,
  rationale and the evidence it used
- anything else: fields, members, or the value"""

from __future__ import annotations

import fnmatch
import json
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from hpcbench.report.stats_explain import StatsView
from hpcbench.store import layout
from hpcbench.store.read import open_store
from hpcbench.store.scorings import Scoring, list_scorings, read_scoring

MAX_TEXT = 4000


def _s(x: object) -> str:
    if isinstance(x, bytes):
        return x.decode(errors="replace")
    if isinstance(x, np.ndarray):
        return json.dumps(x.tolist(), default=str)
    if isinstance(x, np.generic):
        return str(x.item())
    return str(x)


def _num(x: object) -> float | None:
    try:
        v = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v


def _fmt(x: float | None, nd: int = 4) -> str:
    return "unscored" if x is None else f"{x:.{nd}f}"


def _clip(text: str, full: bool) -> str:
    return text if full or len(text) <= MAX_TEXT else text[:MAX_TEXT] + f"\n... ({len(text) - MAX_TEXT} more " \
        "characters; --full shows all)"


def split_path(path: str) -> tuple[str, str, str]:
    """'/a/b@attr.key.sub' -> ('/a/b', 'attr', 'key.sub')."""
    obj, _, rest = path.partition("@")
    attr, _, key = rest.partition(".")
    return "/" + obj.strip("/"), attr, key


@dataclass
class Node:
    """A group-like view of a table row (or a stored object): fields, members, a value."""

    path: str
    attrs: dict = field(default_factory=dict)
    children: list[str] = field(default_factory=list)
    value: str | None = None
    kind: str = "generic"  # scoring-aggregate | score | evaluator | generic
    data: Any = None  # by kind: an evaluator's fields, (scoring, row), (scoring, rows)


def _row_attrs(row: np.void, cols: list[tuple[str, str]], text, codes: list[str]) -> dict:
    out: dict = {}
    for name, kind in cols:
        if kind == "text":
            out[name] = text(row[f"{name}_off"], row[f"{name}_len"])
        elif kind == "code":
            out[name] = codes[row[name]]
        elif kind == "str":
            out[name] = _s(row[name])
        else:
            out[name] = row[name].item()
    return out


class Tree:
    """Logical paths over campaign.h5 (open `f`) and the scorings beside it."""

    def __init__(self, f: h5py.File) -> None:
        self.f = f
        self.root = Path(f.filename).parent
        self._scorings: dict[str, Scoring] = {}
        self._subs: np.ndarray | None = None
        self._codes: list[str] | None = None
        self._stats: dict[str, StatsView] = {}

    def scoring(self, sid: str) -> Scoring | None:
        if sid not in self._scorings:
            if sid not in list_scorings(self.root):
                # a damaged scoring is named as such (read_scoring says why), not as absent
                if not (self.root / "scores" / f"{sid}.h5").is_file():
                    return None
            self._scorings[sid] = read_scoring(self.root, sid, evidence=True)
        return self._scorings[sid]

    def text(self, off: int, n: int) -> str:
        return self.f["texts"][int(off):int(off) + int(n)].tobytes().decode("utf-8", errors="replace") if n else ""

    @property
    def codes(self) -> list[str]:
        if self._codes is None:
            self._codes = [_s(x) for x in self.f["strings"][()]]
        return self._codes

    def sub_row(self, agent: str, problem: str, attempt: str) -> np.void | None:
        if self._subs is None:
            s = self.f["submissions"][()]
            self._subs = s[s["live"]]
        for r in self._subs:
            if (_s(r["agent"]), _s(r["problem"]), _s(r["attempt"])) == (agent, problem, attempt):
                return r
        return None

    def _children_rows(self, table: str, row: np.void) -> np.ndarray:
        start, n = int(row[f"{table}_start"]), int(row[f"{table}_n"])
        return self.f[table][start:start + n] if n else self.f[table][0:0]

    # ------------------------------------------------------------------ nodes

    def node(self, path: str) -> Node | None:
        parts = [p for p in path.strip("/").split("/") if p]
        if not parts:
            return Node("/", {k: _s(v) for k, v in self.f.attrs.items()},
                        ["manifest", "profile", "problems", "petsc", "tables", "submissions", "scores", "stats"])
        head = parts[0]
        if head == "profile":
            return self._profile_node(path, parts[1:])
        if head == "scores":
            return self._score_node(path, parts[1:])
        if head == "submissions":
            return self._sub_node(path, parts[1:])
        if head == "stats":
            return self._stats_node(path, parts[1:])
        if head == "sweep" and len(parts) > 2 and parts[1] == "points" and "sweep" in self.f:
            return Node(path, kind="sweep_point", data=parts[2:])  # hpcbench.sweep.explain
        if head == "tables":
            if len(parts) == 1:
                return Node(path, children=list(layout.TABLES) + ["texts", "strings"])
            return self._h5(parts[1]) if len(parts) == 2 else None
        return self._h5("/".join(parts))

    def _profile_node(self, path: str, rest: list[str]) -> Node | None:
        """The CampaignProfile the campaign was planned with (campaign.json, stored by collect):
        what it measured and how; a campaign from before profiles was planned as `full`."""
        from hpcbench.profile import FULL, CampaignProfile

        stored = json.loads(self.f["manifest"][()].decode()).get("profile") if "manifest" in self.f else None
        prof = CampaignProfile.model_validate(stored) if stored else FULL
        fields = prof.model_dump(mode="json")
        if rest:
            return Node(path, value=_s(fields[rest[0]])) if len(rest) == 1 and rest[0] in fields else None
        lines = [prof.summary() + ("" if stored else " (planned before profiles: read as full)"),
                 *(f"  {k}: {v}" for k, v in fields.items())]
        return Node(path, {k: _s(v) for k, v in fields.items()}, list(fields), value="\n".join(lines))

    def _h5(self, p: str) -> Node | None:
        if p not in self.f:
            return None
        obj = self.f[p]
        if isinstance(obj, h5py.Dataset):
            head = f"dataset /{p}: shape {obj.shape} dtype {obj.dtype}"
            v = obj[()] if obj.size < 100000 else obj[:20]
            return Node("/" + p, {k: _s(x) for k, x in obj.attrs.items()}, value=head + "\n" + _s(v))
        return Node("/" + p, {k: _s(x) for k, x in obj.attrs.items()}, list(obj))

    def _score_node(self, path: str, rest: list[str]) -> Node | None:
        if not rest:
            return Node(path, children=sorted(list_scorings(self.root)))
        sc = self.scoring(rest[0])
        if sc is None:
            return None
        key = rest[1:4]
        rows = [r for r in sc.rows if [r["agent"], r["problem"], r["attempt"]][:len(key)] == key]
        if not rows:
            return None
        if len(rest) < 4:
            kids = sorted({[r["agent"], r["problem"], r["attempt"]][len(key)] for r in rows})
            return Node(path, dict(sc.attrs) if len(rest) == 1 else {}, kids, kind="aggregate", data=(sc, rows))
        row = rows[0]
        attrs = {k: v for k, v in row.items() if k not in ("evaluators", "source")}
        for k in ("left_out", "categories", "unscored"):
            attrs[k] = json.dumps(attrs[k])
        if len(rest) == 4:
            return Node(path, attrs, ["evaluators"], kind="score", data=(sc, row))
        if rest[4] != "evaluators":
            return None
        if len(rest) == 5:
            return Node(path, children=list(row["evaluators"]))
        e = row["evaluators"].get(rest[5])
        if e is None:
            return None
        if len(rest) == 6:
            return Node(path, {k: v for k, v in e.items() if k not in ("evidence", "source")}, ["evidence"],
                        kind="evaluator", data=e)
        if rest[6:] == ["evidence"]:
            return Node(path, value=json.dumps(e.get("evidence"), indent=1, default=str))
        return None

    def _stats_node(self, path: str, rest: list[str]) -> Node | None:
        """The leaderboard's statistics of a scoring (hpcbench.report.stats_explain)."""
        if not rest:
            return Node(path, children=sorted(list_scorings(self.root)))
        sc = self.scoring(rest[0])
        if sc is None:
            return None
        if rest[0] not in self._stats:
            self._stats[rest[0]] = StatsView(self.root, sc)
        view = self._stats[rest[0]]
        kids, leaf = view.children(rest[1:]), view.leaf(rest[1:])
        if kids is None and not leaf:
            return None
        return Node(path, dict(view.stored_item(rest[1:]) or {}) if leaf else {}, kids or [], kind="stats",
                    data=(view, rest[1:]))

    def _sub_node(self, path: str, rest: list[str]) -> Node | None:
        if not rest:
            return Node(path, children=sorted({_s(a) for a in self.f["submissions"]["agent"]}))
        if len(rest) < 3:
            s = self.f["submissions"].fields(["agent", "problem", "attempt", "live"])[()]
            kids = sorted({_s(r[len(rest)]) for r in s if r["live"] and [_s(x) for x in r][:len(rest)] == rest})
            return Node(path, children=kids) if kids else None
        row = self.sub_row(*rest[:3])
        if row is None:
            return None
        codes, text = self.codes, self.text
        if len(rest) == 3:
            attrs = _row_attrs(row, [c for c in layout.TABLES["submissions"] if c[0] not in ("sources", "record")],
                               text, codes)
            return Node(path, attrs, ["sources", "build", "runs", "timings", "record"])
        what, more = rest[3], rest[4:]
        if what == "record":
            return Node(path, value=text(row["record_off"], row["record_len"])) if not more else None
        if what == "sources":
            src = json.loads(text(row["sources_off"], row["sources_len"]) or "{}")
            if not more:
                return Node(path, children=list(src))
            name = "/".join(more)
            return Node(path, value=src[name]) if name in src else None
        if what == "timings":
            rows = self._children_rows("timings", row)
            return Node(path, value="\n".join(json.dumps(_row_attrs(r, layout.TABLES["timings"], text, codes))
                                              for r in rows)) if not more else None
        if what == "build":
            rows = self._children_rows("builds", row)
            if not len(rows):
                return None
            attrs = _row_attrs(rows[0], layout.TABLES["builds"], text, codes)
            return self._leaf(path, attrs, more, ("command", "stdout", "stderr", "makefile"))
        if what == "runs":
            rows = self._children_rows("runs", row)
            if not more:
                return Node(path, children=[f"{int(r['run']):03d}" for r in rows])
            got = [r for r in rows if f"{int(r['run']):03d}" == more[0]]
            if not got:
                return None
            attrs = _row_attrs(got[0], layout.TABLES["runs"], text, codes)
            attrs.update(self._where(row, int(got[0]["run"]), path))
            if more[1:] == ["log_view"]:
                lv = [r for r in self._children_rows("log_view", row) if r["run"] == got[0]["run"]]
                return Node(path, value="\n".join(json.dumps(_row_attrs(r, layout.TABLES["log_view"], text, codes))
                                                  for r in lv))
            return self._leaf(path, attrs, more[1:], ("stdout", "stderr", "log_view"))
        return None

    def _where(self, row: np.void, i: int, path: str) -> dict:
        """Where a run ran, from its record: the cores and GPUs it was given, what each rank
        was seen on by the job wrapper, and whether it shared a core with another step."""
        from hpcbench.score.scoring import campaign_contention
        from hpcbench.store.read import skeletons_of

        runs = json.loads(self.text(row["record_off"], row["record_len"]) or "{}").get("runs", [])
        if i >= len(runs):
            return {}
        r, place = runs[i], runs[i].get("placement") or {}
        seen = [f"rank {a.get('rank')} on {a.get('host')}: CPUs {a.get('cpus')}"
                + (f" then {a['changed_to']}" if a.get("changed_to") else "")
                + "".join(f", {k}={v}" for k, v in (a.get("gpus") or {}).items())
                + f", waited {a.get('cpu_wait_s', 0):.3f} s for a CPU ({a.get('source')})"
                for a in r.get("affinity") or []]
        sub = "/".join(path.split("/")[:5])
        contended = campaign_contention(Path(self.f.filename), skeletons_of(self.f)).get(sub, {}).get(i, "")
        return {"cpus_given": place.get("cpus", ""), "gpus_given": ",".join(place.get("gpus") or []),
                "binding": place.get("binding", ""), "ranks_seen": "; ".join(seen) or r.get("affinity_note", ""),
                "contended": contended or "no (no other step on its CPUs while it ran)",
                "memory_peak_bytes": r.get("memory_peak_bytes")}

    @staticmethod
    def _leaf(path: str, attrs: dict, more: list[str], texts: tuple[str, ...]) -> Node | None:
        if not more:
            return Node(path, {k: v for k, v in attrs.items() if k not in texts}, list(texts))
        if len(more) == 1 and more[0] in attrs:
            return Node(path, value=str(attrs[more[0]]))
        return None

    def expand(self, pattern: str) -> list[str]:
        """Paths matching a pattern with `*` components."""
        parts = [p for p in pattern.strip("/").split("/") if p]
        found = ["/"]
        for part in parts:
            nxt = []
            for base in found:
                n = self.node(base)
                if n is None:
                    continue
                names = [c for c in n.children if fnmatch.fnmatchcase(c, part)] if any(
                    c in part for c in "*?[") else [part]
                nxt += [f"{base.rstrip('/')}/{c}" for c in names]
            found = [p for p in nxt if self.node(p) is not None]
        return found


def _evaluator_results(row: dict) -> list:
    from hpcbench.evaluators.base import EvalResult

    return [EvalResult(evaluator=n, stage=e["stage"], category=e["category"], status=e["status"], score=e["score"],
                       passed=e["passed"], confidence=e["confidence"], method=e["method"], rationale=e["rationale"])
            for n, e in row["evaluators"].items()]


def explain_submission_score(sc: Scoring, a: dict) -> list[str]:
    from hpcbench.score.scoring import aggregate

    weights = sc.weights
    results = _evaluator_results(a)
    stored = a["composite"]
    derived, why = _tier(a, results)
    lines = [f"composite: {_fmt(stored, 2)}  tier: {derived}  submission: {_s(a.get('submission', ''))}",
             f"status: {_s(a.get('status', ''))}  refused: {bool(a.get('refused', False))}"]
    if why:
        lines.append(why)
    if bool(a.get("refused", False)) or bool(a.get("refusal_set", False)):
        lines.append("refusals and problems whose right answer is to decline have no composite; "
                     "see their refusal evaluator below")
    gates = [r for r in results if r.stage == "gate"]
    lines += ["", "gates (a failed one ends the submission at 0):"]
    for r in gates:
        state = "unscored" if r.status != "scored" else ("pass" if r.passed else "FAIL")
        lines.append(f"  {r.evaluator:20s} {state:8s} {r.rationale[:160]}")
    failed = _s(a.get("failed_gate", ""))
    if failed:
        lines += ["", f"gate {failed} failed: every category and the composite are 0 by rule "
                      "(later evaluators did not run)"]
        return lines
    # Scored here but unscored for another submission of the problem: left out of every composite of it.
    apart = {str(n) for n in a.get("unscored") or []}
    results = [r for r in results if r.evaluator not in apart or r.stage == "gate"]
    lines += ["", "categories = confidence-weighted mean of their scored metric and quality evaluators:"]
    for cat, w in weights.items():
        mine = [r for r in results if r.category == cat and r.stage != "gate"]
        scored = [r for r in mine if r.status == "scored" and r.score is not None]
        terms = ", ".join(f"{r.evaluator} {r.score:.4f} x conf {r.confidence:.2f}" for r in scored) or "none scored"
        left = [r.evaluator for r in mine if r not in scored]
        wsum = sum(r.confidence for r in scored)
        val = sum(r.confidence * r.score for r in scored) / wsum if wsum else None
        lines.append(f"  {cat:16s} weight {w:.2f}  = {_fmt(val)}  [{terms}]" + (
            f"  unscored: {', '.join(left)}" if left else ""))
    cats, comp, left_out = aggregate(results, weights)
    present = {c: v for c, v in cats.items() if v is not None}
    if present:
        wtot = sum(weights[c] for c in present)
        expr = " + ".join(f"{weights[c]:.2f}*{v:.4f}" for c, v in present.items())
        lines += ["", f"composite = 100 * ({expr}) / {wtot:.2f} = {_fmt(comp, 2)}"]
    if left_out:
        lines.append(f"partial: leaves out {', '.join(left_out)} (weights renormalised over the rest)")
    if apart:
        lines.append(f"left out of every composite of this problem (unscored for some submission of it): "
                     f"{', '.join(sorted(apart))}")
    if comp is not None and stored is not None:
        same = abs(comp - stored) < 1e-6
        lines.append(f"recomputed {comp:.4f}, stored {stored:.4f}: {'match' if same else 'MISMATCH'}")
    return lines


def _tier(a: dict, results: list) -> tuple[str, str]:
    """The tier as the rule gives it (derived again: a scoring written before tiers required
    every hidden check passed may have stored one for a wrong answer), and why."""
    from hpcbench.score.scoring import accuracy_passed, tier

    passed = not _s(a.get("failed_gate", "")) and accuracy_passed(results)
    derived = tier(a["composite"], passed)
    if a["composite"] is None or _s(a.get("failed_gate", "")):
        return derived, ""
    acc = next((r for r in results if r.evaluator == "numerical_accuracy"), None)
    why = ("tier by composite (GOLD >= 85, SILVER >= 70, BRONZE >= 50): every gate and every hidden check passed"
           if passed else "tier NONE whatever the composite: a hidden check failed (numerical_accuracy "
           f"{_fmt(acc.score if acc else None)}, {acc.status if acc else 'missing'}); a wrong answer gets no tier")
    stored = _s(a.get("tier", ""))
    if stored and stored != derived:
        why += f" (this scoring stored {stored}, by the rule it was written under)"
    return derived, why


def explain_evaluator(name: str, a: dict, full: bool) -> list[str]:
    lines = [f"evaluator {name}: score {_fmt(a['score'])}  confidence {a['confidence']:.2f}  status {a['status']}",
             f"stage {a['stage']}  category {a['category']}  method {a['method']}"]
    if a.get("judge_model"):
        lines.append(f"judge {a['judge_model']}  prompt version {a['prompt_version']}  tokens "
                     f"{a['prompt_tokens']}+{a['completion_tokens']}  cost {a['cost_usd']:.4f} USD")
    lines += ["", "rationale:", "  " + a.get("rationale", "")]
    if a.get("evidence") is not None:
        lines += ["", "evidence:", _clip(json.dumps(a["evidence"], indent=1, default=str), full)]
    return lines


def explain_aggregate(path: str, sc: Scoring, leaves: list[dict]) -> list[str]:
    """A scoring, an agent or a problem of an agent: the mean the report shows."""
    # as the leaderboard counts: every attempt at a solvable problem (a refusal of one at 0);
    # the refusal set (problems to decline) is outside the composite
    rows = [o for o in leaves if not o["refusal_set"]]
    comps = [o["composite"] for o in rows if o["composite"] is not None]
    lines = [f"{len(rows)} scored submissions under {path} (refusal-set problems excluded: "
             f"{len(leaves) - len(rows)}); a failed gate or a refusal counts as its composite 0", ""]
    for o in rows:
        name = o["source"][len(path):].strip("/") or o["source"]
        lines.append(f"  {name:40s} composite {_fmt(o['composite'], 2)}"
                     f"  gates {'pass' if o['gates_passed'] else 'FAIL ' + o['failed_gate']}"
                     + ("  partial" if o["partial"] else ""))
    parts = path.strip("/").split("/")
    # empty: no problem every agent attempted, and each agent's mean is over its own (stats.analysis)
    common = (_common_problems(sc.rows) or None) if len(parts) == 3 else None
    if comps:
        kept = [o for o in rows if common is None or o["problem"] in common]
        per = _by_problem(kept, lambda o: o["composite"])
        dropped = sorted({o["problem"] for o in rows} - set(per))
        where = (f"; the problems every agent attempted, {len(dropped)} left out: {', '.join(dropped)}" if dropped
                 else "")
        lines += ["", f"composite_mean = mean of {len(per)} problem means (over "
                      f"{sum(len(v) for v in per.values())} attempts) = "
                      + (f"{statistics.fmean(statistics.fmean(v) for v in per.values()):.4f}" if per else "—")
                      + f"  (each problem counts once{where})",
                  f"composite_std  = sample standard deviation of the attempts = "
                  f"{statistics.stdev(comps):.4f}" if len(comps) > 1 else "composite_std  = — (one attempt)"]
    if rows:
        passed = sum(o["gates_passed"] for o in rows)
        lines.append(f"gate_pass_rate = {passed}/{len(rows)} = {passed / len(rows):.4f}")
        for cat in sc.weights:
            per = _by_problem(rows, lambda o, c=cat: o["categories"].get(c))
            lines.append(f"{cat:15s}= mean of {len(per)} problem means = "
                         + (f"{statistics.fmean(statistics.fmean(v) for v in per.values()):.4f}" if per
                            else "— (none scored)"))
        if len(parts) == 3:  # an agent: where its interval, rank range and pass@k are re-derived
            lines.append(f"interval: /stats/{sc.sid}/agents/{parts[2]}, rank: /stats/{sc.sid}/ranks/{parts[2]}, "
                         f"pass@k: /stats/{sc.sid}/pass_at_k/{parts[2]}")
    return lines


def _common_problems(rows: list[dict]) -> set[str]:
    """The problems every agent has a scored attempt at (the leaderboard's means are over these,
    hpcbench.stats.missing)."""
    by_agent: dict[str, set[str]] = {}
    for o in rows:
        if not o["refusal_set"] and o["composite"] is not None:
            by_agent.setdefault(o["agent"], set()).add(o["problem"])
    return set.intersection(*by_agent.values()) if by_agent else set()


def _by_problem(rows: list[dict], value) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for o in rows:
        v = value(o)
        if v is not None:
            out.setdefault(o["problem"], []).append(v)
    return out


def _generic(node: Node, attr: str, key: str, full: bool) -> list[str]:
    if attr:
        if attr not in node.attrs:
            raise LookupError(f"{node.path}: no field {attr!r}; it has {sorted(node.attrs)}")
        text = _s(node.attrs[attr])
        if key:
            try:
                data = json.loads(text)
            except json.JSONDecodeError:
                raise LookupError(f"{node.path}@{attr} is not JSON; cannot take .{key}") from None
            for k in key.split("."):
                if not isinstance(data, dict) or k not in data:
                    raise LookupError(f"{node.path}@{attr}: no key {key!r}")
                data = data[k]
            text = json.dumps(data, indent=1, default=str)
        return [f"{node.path}@{attr}{'.' + key if key else ''} = {_clip(text, full)}"]
    if node.value is not None:
        return [node.path, _clip(node.value, full)]
    lines = [f"group {node.path}"]
    for k, v in sorted(node.attrs.items()):
        lines.append(f"  @{k} = {_s(v)[:200]}")
    lines += [f"  {c}" for c in node.children]
    return lines


def explain(h5_path: Path, path: str, full: bool = False) -> str:
    h5_path = Path(h5_path)
    obj_path, attr, key = split_path(path)
    out: list[str] = []
    with open_store(h5_path, "explain") as f:
        tree = Tree(f)
        targets = tree.expand(obj_path) if any(c in obj_path for c in "*?[") else (
            [obj_path] if tree.node(obj_path) is not None else [])
        if not targets:
            raise LookupError(f"{h5_path.parent}: nothing at {obj_path!r}")
        for t in targets:
            node = tree.node(t)
            assert node is not None
            if len(targets) > 1:
                out.append(f"== {t}")
            if attr:
                out += _generic(node, attr, key, full) + [""]
                if node.kind == "generic":
                    continue
            if node.kind == "evaluator":
                out += explain_evaluator(t.rsplit("/", 1)[1], node.data, full)
            elif node.kind == "score":
                sc, row = node.data
                out += explain_submission_score(sc, row)
            elif node.kind == "sweep_point":
                from hpcbench.sweep.explain import explain_point

                out += explain_point(f, node.data)
            elif node.kind == "stats":
                view, rest = node.data
                out += view.explain(rest)
            elif node.kind == "aggregate":
                sc, rows = node.data
                out += explain_aggregate(t, sc, rows)  # leaderboard and per-problem means: computed, not stored
            elif not attr:
                out += _generic(node, "", "", full)
            if len(targets) > 1:
                out.append("")
    return "\n".join(out).rstrip() + "\n"
