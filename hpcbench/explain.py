"""`hpcbench explain CAMPAIGN H5PATH`: the value stored at a path of campaign.h5
and how it was derived, so any number in a report can be traced and re-derived.

Paths are those the reports print: a group or dataset (`/scores/<id>/<agent>/
<problem>/<attempt>`), optionally `@attr` for one attribute and `.key` into a
JSON attribute (`<submission>@submission_json.generation`); `*` matches one
path component (`/scores/<id>/*/rosenbrock/*@composite`).

- a scoring, an agent or a problem under /scores: the aggregate the leaderboard
  and per-problem tables show, recomputed from the submissions it averages
- a submission's score: its gates, each category's confidence-weighted mean of
  its evaluators, the weights and the renormalised composite, recomputed and
  compared with the stored value
- an evaluator: score, confidence, method, judge model and prompt version,
  rationale and the evidence it used
- anything else: attributes, members, or the dataset's value"""

from __future__ import annotations

import fnmatch
import json
import math
import statistics
from pathlib import Path

import h5py
import numpy as np

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


def split(path: str) -> tuple[str, str, str]:
    """'/a/b@attr.key.sub' -> ('/a/b', 'attr', 'key.sub')."""
    obj, _, rest = path.partition("@")
    attr, _, key = rest.partition(".")
    return "/" + obj.strip("/"), attr, key


def expand(f: h5py.File, pattern: str) -> list[str]:
    """Paths matching a pattern with `*` components (in file order)."""
    parts = [p for p in pattern.strip("/").split("/") if p]
    found = ["/"]
    for part in parts:
        nxt = []
        for base in found:
            g = f[base]
            if not isinstance(g, h5py.Group):
                continue
            names = [n for n in g if fnmatch.fnmatchcase(n, part)] if any(c in part for c in "*?[") else (
                [part] if part in g else [])
            nxt += [f"{base.rstrip('/')}/{n}" for n in names]
        found = nxt
    return found


def _evaluator_results(g: h5py.Group) -> list:
    from hpcbench.evaluators.base import EvalResult

    out = []
    for n, e in (g["evaluators"].items() if "evaluators" in g else []):
        a = e.attrs
        passed = int(a.get("passed", -1))
        out.append(EvalResult(evaluator=n, stage=_s(a["stage"]), category=_s(a["category"]), status=_s(a["status"]),
                              score=_num(a["score"]), passed=None if passed < 0 else bool(passed),
                              confidence=float(a["confidence"]), method=_s(a.get("method", "")),
                              rationale=_s(a.get("rationale", ""))))
    return out


def explain_submission_score(f: h5py.File, g: h5py.Group) -> list[str]:
    from hpcbench.scoring import aggregate

    a = g.attrs
    sid = g.name.split("/")[2]
    weights = json.loads(f["scores"][sid].attrs.get("weights", "{}") or "{}")
    results = _evaluator_results(g)
    stored = _num(a["composite"])
    lines = [f"composite: {_fmt(stored, 2)}  tier: {_s(a.get('tier', ''))}  submission: {_s(a.get('submission', ''))}",
             f"status: {_s(a.get('status', ''))}  refused: {bool(a.get('refused', False))}"]
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
    lines += ["", "categories = confidence-weighted mean of their scored metric and quality evaluators:"]
    for cat, w in weights.items():
        mine = [r for r in results if r.category == cat and r.stage != "gate"]
        scored = [r for r in mine if r.status == "scored" and r.score is not None]
        terms = ", ".join(f"{r.evaluator} {r.score:.4f} x conf {r.confidence:.2f}" for r in scored) or "none scored"
        left = [r.evaluator for r in mine if r not in scored]
        wsum = sum(r.confidence for r in scored)
        val = sum(r.confidence * r.score for r in scored) / wsum if wsum else None  # type: ignore[operator]
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
    if comp is not None and stored is not None:
        same = abs(comp - stored) < 1e-6
        lines.append(f"recomputed {comp:.4f}, stored {stored:.4f}: {'match' if same else 'MISMATCH'}")
    return lines


def explain_evaluator(g: h5py.Group, full: bool) -> list[str]:
    a = g.attrs
    lines = [f"evaluator {g.name.rsplit('/', 1)[1]}: score {_fmt(_num(a['score']))}  confidence "
             f"{float(a['confidence']):.2f}  status {_s(a['status'])}",
             f"stage {_s(a['stage'])}  category {_s(a['category'])}  method {_s(a.get('method', ''))}"]
    if _s(a.get("judge_model", "")):
        lines.append(f"judge {_s(a['judge_model'])}  prompt version {_s(a.get('prompt_version', ''))}  tokens "
                     f"{int(a.get('prompt_tokens', 0))}+{int(a.get('completion_tokens', 0))}  cost "
                     f"{float(a.get('cost_usd', 0.0)):.4f} USD")
    lines += ["", "rationale:", "  " + _s(a.get("rationale", ""))]
    if "evidence" in g:
        ev = json.loads(g["evidence"][()])
        lines += ["", "evidence:", _clip(json.dumps(ev, indent=1, default=str), full)]
    return lines


def explain_aggregate(f: h5py.File, g: h5py.Group) -> list[str]:
    """A scoring, an agent or a problem of an agent: the mean the report shows."""
    leaves = []
    g.visititems(lambda n, o: leaves.append(o) if isinstance(o, h5py.Group) and "composite" in o.attrs else None)
    # as the leaderboard counts: every attempt at a solvable problem (a refusal of one at 0);
    # the refusal set (problems to decline) is outside the composite
    rows = [o for o in leaves if not bool(o.attrs.get("refusal_set", False))]
    comps = [c for c in (_num(o.attrs["composite"]) for o in rows) if c is not None]
    sid = g.name.split("/")[2]
    weights = json.loads(f["scores"][sid].attrs.get("weights", "{}") or "{}")
    lines = [f"{len(rows)} scored submissions under {g.name} (refusal-set problems excluded: "
             f"{len(leaves) - len(rows)}); a failed gate or a refusal counts as its composite 0", ""]
    for o in rows:
        name = o.name[len(g.name):].strip("/") or o.name
        lines.append(f"  {name:40s} composite {_fmt(_num(o.attrs['composite']), 2)}"
                     f"  gates {'pass' if o.attrs['gates_passed'] else 'FAIL ' + _s(o.attrs['failed_gate'])}"
                     + ("  partial" if o.attrs.get("partial", False) else ""))
    if comps:
        lines += ["", f"composite_mean = mean of {len(comps)} = {statistics.fmean(comps):.4f}",
                  f"composite_std  = sample standard deviation = "
                  f"{statistics.stdev(comps):.4f}" if len(comps) > 1 else "composite_std  = — (one attempt)"]
    if rows:
        rate = sum(bool(o.attrs["gates_passed"]) for o in rows) / len(rows)
        lines.append(f"gate_pass_rate = {sum(bool(o.attrs['gates_passed']) for o in rows)}/{len(rows)} = {rate:.4f}")
        for cat in weights:
            vals = [json.loads(o.attrs["categories"]).get(cat) for o in rows]
            vals = [v for v in vals if v is not None]
            lines.append(f"{cat:15s}= mean over {len(vals)} scored = "
                         + (f"{statistics.fmean(vals):.4f}" if vals else "— (none scored)"))
    return lines


def _generic(obj: h5py.HLObject, attr: str, key: str, full: bool) -> list[str]:
    if attr:
        if attr not in obj.attrs:
            raise LookupError(f"{obj.name}: no attribute {attr!r}; it has {sorted(obj.attrs)}")
        value = obj.attrs[attr]
        text = _s(value)
        if key:
            try:
                data = json.loads(text)
            except json.JSONDecodeError:
                raise LookupError(f"{obj.name}@{attr} is not JSON; cannot take .{key}") from None
            for k in key.split("."):
                if not isinstance(data, dict) or k not in data:
                    raise LookupError(f"{obj.name}@{attr}: no key {key!r}")
                data = data[k]
            text = json.dumps(data, indent=1, default=str)
        return [f"{obj.name}@{attr}{'.' + key if key else ''} = {_clip(text, full)}"]
    if isinstance(obj, h5py.Dataset):
        v = obj[()]
        return [f"dataset {obj.name}: shape {obj.shape} dtype {obj.dtype}", _clip(_s(v), full)]
    lines = [f"group {obj.name}"]
    for k, v in sorted(obj.attrs.items()):
        lines.append(f"  @{k} = {_s(v)[:200]}")
    for n, child in obj.items():
        kind = "group" if isinstance(child, h5py.Group) else f"dataset {child.shape}"
        lines.append(f"  {n}/ ({kind})" if isinstance(child, h5py.Group) else f"  {n} ({kind})")
    return lines


def explain(h5_path: Path, path: str, full: bool = False) -> str:
    h5_path = Path(h5_path)
    obj_path, attr, key = split(path)
    out: list[str] = []
    with h5py.File(h5_path, "r") as f:
        targets = expand(f, obj_path) if any(c in obj_path for c in "*?[") else (
            [obj_path] if obj_path in f or obj_path == "/" else [])
        if not targets:
            raise LookupError(f"{h5_path}: nothing at {obj_path!r}")
        for t in targets:
            obj = f[t]
            parts = t.strip("/").split("/")
            if len(targets) > 1:
                out.append(f"== {t}")
            if parts[0] == "scores" and len(parts) >= 3 and isinstance(obj, h5py.Group):
                if attr and attr in obj.attrs:
                    out += _generic(obj, attr, key, full) + [""]
                if len(parts) >= 7 and parts[5] == "evaluators":
                    out += explain_evaluator(obj, full)
                elif "composite" in obj.attrs:
                    out += explain_submission_score(f, obj)
                else:
                    out += explain_aggregate(f, obj)  # leaderboard and per-problem means: computed, not stored
            else:
                out += _generic(obj, attr, key, full)
            if len(targets) > 1:
                out.append("")
    return "\n".join(out).rstrip() + "\n"
