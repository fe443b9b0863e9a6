"""Reports from a scored campaign.h5, in markdown, HTML (one self-contained file,
plots embedded), CSV or JSON:

- leaderboard per agent: mean composite and spread over attempts, gate pass
  rate, per-category means; partial composites marked with what they leave out
- per-problem table: mean composite of each agent on each problem
- per-category profile plot (matplotlib)
- failure taxonomy on two axes: how far each attempt got (generated, compiled,
  ran, passed checks) and why it stopped
- tokens and cost per case: generation (submission.json) and judging (/scores)
- judge agreement, when a second judge scored the same campaign (hpcbench.agreement)

Every number names its source: the HDF5 path it was read from and the command
that re-derives it, `hpcbench explain CAMPAIGN PATH` (hpcbench.explain)."""

from __future__ import annotations

import base64
import html
import io
import json
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path

import h5py
import numpy as np

from hpcbench import agreement

CATEGORIES = ["correctness", "performance", "code", "appropriateness", "library"]
STAGES = ["generated", "compiled", "ran", "passed checks"]


def latest_scoring(f: h5py.File) -> str:
    if "scores" not in f or not len(f["scores"]):
        raise LookupError(f"{f.filename}: no scoring yet; run `hpcbench score {Path(f.filename).parent}`")
    # by creation time, not by name: `--scoring-id` names need not sort like timestamps
    return max(f["scores"].keys(), key=lambda k: (str(f["scores"][k].attrs.get("created", "")), k))


def _nan(x: object) -> float | None:
    if x is None:
        return None
    v = float(x)  # type: ignore[arg-type]
    return None if math.isnan(v) else v


def _s(x: object) -> str:
    return x.decode() if isinstance(x, bytes) else str(x)


@dataclass
class Report:
    h5_path: Path
    sid: str
    rows: list[dict]
    provenance: dict
    weights: dict[str, float]
    scoring: dict = field(default_factory=dict)

    @property
    def campaign(self) -> str:
        return str(self.h5_path.parent)

    def explain(self, path: str) -> str:
        return f"hpcbench explain {self.campaign} {path}"

    @property
    def categories(self) -> list[str]:
        return list(self.weights) or CATEGORIES

    @property
    def scored(self) -> list[dict]:
        """Rows that count towards the composite: every solvable problem's attempt,
        a refusal of one included (at 0); the refusal set has its own column."""
        return [r for r in self.rows if not r["refusal_set"]]


# ----------------------------------------------------------------------------- reading


def _stage_and_reason(a: h5py.AttributeManager, evs: dict, sub: h5py.Group | None) -> tuple[str, str]:
    """How far an attempt got and why it stopped, from its scores and its record."""
    status = _s(a.get("status", ""))
    if a.get("refused", False):
        return "refused", "refused"
    if status == "generation failed":
        return "not generated", "generation failed"
    if status in ("not run", "skipped") or (sub is not None and "record" not in sub):
        return "generated", status or "not run"
    failed = _s(a.get("failed_gate", ""))
    if failed == "compilation":
        return "generated", "build failed"
    if failed == "execution":
        why, text = "nonzero exit", evs.get("execution", {}).get("rationale", "").lower()
        runs = [r.attrs for r in sub["runs"].values() if _s(r.attrs.get("kind", "")) == "instrumented"] \
            if sub is not None and "runs" in sub else []
        codes = [int(r.get("exit_code", 0)) for r in runs]
        if any(bool(r.get("timed_out", False)) for r in runs) or "timed out" in text or "timeout" in text:
            why = "timeout"
        elif any(int(r.get("signal", 0) or 0) for r in runs) or any(c > 128 for c in codes) or \
                "segmentation" in text or "signal" in text:
            why = "crash (signal)"
        elif any(_s(r.get("stopped_reason", "")) for r in runs):
            why = next(_s(r.get("stopped_reason", "")) for r in runs if _s(r.get("stopped_reason", "")))
        elif "petsc:" in text or "petsc error" in text:
            why = "PETSc error"
        return "compiled", why
    if failed == "memory_safety":
        return "ran", "memory error or leak"
    if failed == "api_usage":
        return "ran", "PETSc API misuse"
    if failed:
        return "ran", f"gate {failed}"
    acc = evs.get("numerical_accuracy", {})
    if acc.get("status") != "scored":
        return "ran", "accuracy unscored"
    if (acc.get("score") or 0.0) < 0.999:
        return "ran", "wrong answer"
    return "passed checks", "complete"


def _generation(sub: h5py.Group | None) -> dict:
    if sub is None or "submission_json" not in sub.attrs:
        return {}
    gen = json.loads(sub.attrs["submission_json"]).get("generation") or {}
    return {k: gen.get(k) for k in ("prompt_tokens", "completion_tokens", "cost_usd", "latency_s", "turns")}


def load(h5_path: Path, scoring_id: str | None = None) -> Report:
    h5_path = Path(h5_path)
    rows: list[dict] = []
    with h5py.File(h5_path, "r") as f:
        sid = scoring_id or latest_scoring(f)
        if "scores" not in f or sid not in f["scores"]:
            raise LookupError(f"{h5_path}: no scoring {sid!r}; have {sorted(f.get('scores', {}).keys())}")
        root = f["scores"][sid]
        weights = json.loads(root.attrs.get("weights", "{}") or "{}")
        scoring = {"created": _s(root.attrs.get("created", "")), "config": json.loads(root.attrs.get("config", "{}"))}
        prov = {k: _s(f.attrs[k]) for k in ("site", "petsc_version", "mpi", "hpcbench_version", "git_commit",
                                            "campaign_id", "collected") if k in f.attrs}
        for agent, ag in root.items():
            for prob, pg in ag.items():
                for att, g in pg.items():
                    a = g.attrs
                    spath = _s(a.get("submission", ""))
                    sub = f[spath] if spath and spath in f else None
                    build_s = float(sub["build"].attrs["wall_s"]) if sub is not None and "build" in sub else None
                    run_s = float(sum(r.attrs["wall_s"] for r in sub["runs"].values())) \
                        if sub is not None and "runs" in sub else None
                    evs = {}
                    judge = {"prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0}
                    for n, e in (g["evaluators"].items() if "evaluators" in g else []):
                        evs[n] = {"score": _nan(e.attrs["score"]), "confidence": float(e.attrs["confidence"]),
                                  "status": _s(e.attrs["status"]), "rationale": _s(e.attrs["rationale"]),
                                  "method": _s(e.attrs.get("method", "")), "category": _s(e.attrs.get("category", "")),
                                  "source": f"{g.name}/evaluators/{n}"}
                        for k in judge:
                            judge[k] += float(e.attrs.get(k, 0) or 0)
                    stage, reason = _stage_and_reason(a, evs, sub)
                    src = f"/scores/{sid}/{agent}/{prob}/{att}"
                    rows.append({
                        "agent": agent, "problem": prob, "attempt": att,
                        "status": _s(a.get("status", "")), "refused": bool(a.get("refused", False)),
                        "refusal_set": bool(a.get("refusal_set", False)),
                        "gates_passed": bool(a["gates_passed"]), "failed_gate": _s(a["failed_gate"]),
                        "composite": _nan(a["composite"]), "tier": _s(a["tier"]), "partial": bool(a["partial"]),
                        "left_out": json.loads(a["left_out"]), "categories": json.loads(a["categories"]),
                        "unscored": json.loads(a.get("unscored", "[]")),
                        "build_s": build_s, "run_s": run_s, "evaluators": evs,
                        "stage": stage, "stop_reason": reason,
                        "generation": _generation(sub), "judge_cost": judge,
                        "source": src, "submission": spath, "explain": f"hpcbench explain {h5_path.parent} {src}",
                        "why": evs.get(_s(a["failed_gate"]), {}).get("rationale", "") if a["failed_gate"] else "",
                    })
    rows.sort(key=lambda r: (r["agent"], r["problem"], r["attempt"]))
    return Report(h5_path, sid, rows, prov, weights, scoring)


def submission_rows(h5_path: Path, scoring_id: str | None = None) -> tuple[str, list[dict]]:
    rep = load(h5_path, scoring_id)
    return rep.sid, rep.rows


# ----------------------------------------------------------------------------- tables


def _mean(xs: list[float]) -> float | None:
    return statistics.fmean(xs) if xs else None


def leaderboard(rep: Report) -> list[dict]:
    """One row per agent over its scored attempts; a failed gate counts as its 0."""
    out = []
    for agent in sorted({r["agent"] for r in rep.scored}):
        mine = [r for r in rep.scored if r["agent"] == agent]
        comps = [r["composite"] for r in mine if r["composite"] is not None]
        row = {"agent": agent, "submissions": len(mine), "composite_mean": _mean(comps),
               "composite_std": statistics.stdev(comps) if len(comps) > 1 else None,
               "composite_min": min(comps) if comps else None, "composite_max": max(comps) if comps else None,
               "gate_pass_rate": sum(r["gates_passed"] for r in mine) / len(mine),
               "partial": sum(r["partial"] for r in mine),
               "left_out": sorted({c for r in mine if r["partial"] for c in r["left_out"]}),
               "source": f"/scores/{rep.sid}/{agent}", "explain": rep.explain(f"/scores/{rep.sid}/{agent}")}
        for c in rep.categories:
            vals = [r["categories"].get(c) for r in mine]
            row[c] = _mean([v for v in vals if v is not None])
        out.append(row)
    return sorted(out, key=lambda r: -(r["composite_mean"] if r["composite_mean"] is not None else -1))


def per_problem(rep: Report) -> tuple[list[str], list[str], dict[tuple[str, str], dict]]:
    agents = sorted({r["agent"] for r in rep.scored})
    problems = sorted({r["problem"] for r in rep.scored})
    cells = {}
    for a in agents:
        for p in problems:
            mine = [r for r in rep.scored if r["agent"] == a and r["problem"] == p]
            if not mine:
                continue
            comps = [r["composite"] for r in mine if r["composite"] is not None]
            cells[(a, p)] = {"mean": _mean(comps), "n": len(mine), "partial": any(r["partial"] for r in mine),
                             "passed": sum(r["gates_passed"] for r in mine),
                             "source": f"/scores/{rep.sid}/{a}/{p}"}
    return agents, problems, cells


def taxonomy(rep: Report) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]:
    """(stage counts per agent, stop-reason counts per agent), refusals included."""
    stages: dict[str, dict[str, int]] = {}
    reasons: dict[str, dict[str, int]] = {}
    for r in rep.rows:
        if r["refusal_set"]:
            continue  # the refusal set is judged by the refusal evaluator, not by how far a program got
        stages.setdefault(r["agent"], {})
        reasons.setdefault(r["agent"], {})
        stages[r["agent"]][r["stage"]] = stages[r["agent"]].get(r["stage"], 0) + 1
        reasons[r["agent"]][r["stop_reason"]] = reasons[r["agent"]].get(r["stop_reason"], 0) + 1
    return stages, reasons


def reached(stage_counts: dict[str, int], stage: str) -> int:
    """Attempts that got at least as far as `stage` (the axes are cumulative)."""
    if stage not in STAGES:
        return stage_counts.get(stage, 0)
    i = STAGES.index(stage)
    return sum(n for s, n in stage_counts.items() if s in STAGES and STAGES.index(s) >= i)


def refusals(rep: Report) -> list[dict]:
    """Problems whose right answer is to decline, and agents' refusals of solvable ones."""
    out = []
    for r in rep.rows:
        if not (r["refusal_set"] or r["refused"]):
            continue
        ev = next((dict(e, name=n) for n, e in r["evaluators"].items() if e.get("category") == "refusal"), None)
        out.append({"agent": r["agent"], "problem": r["problem"], "attempt": r["attempt"],
                    "should_refuse": r["refusal_set"], "refused": r["refused"],
                    "evaluator": ev["name"] if ev else "", "score": ev["score"] if ev else None,
                    "rationale": ev["rationale"] if ev else "",
                    "source": ev["source"] if ev else r["source"]})
    return out


def costs(rep: Report) -> list[dict]:
    out = []
    for r in rep.rows:
        g, j = r["generation"], r["judge_cost"]
        out.append({"agent": r["agent"], "problem": r["problem"], "attempt": r["attempt"],
                    "prompt_tokens": g.get("prompt_tokens") or 0, "completion_tokens": g.get("completion_tokens") or 0,
                    "cost_usd": g.get("cost_usd") or 0.0, "latency_s": g.get("latency_s") or 0.0,
                    "turns": g.get("turns") or 0, "judge_tokens": int(j["prompt_tokens"] + j["completion_tokens"]),
                    "judge_cost_usd": j["cost_usd"],
                    "source": f"{r['submission']}@submission_json.generation",
                    "judge_source": f"{r['source']}/evaluators/*@cost_usd"})
    return out


# ----------------------------------------------------------------------------- plot


def profile_png(rep: Report) -> bytes:
    """Grouped bars: each agent's mean score per category (failed gates count 0)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lb = leaderboard(rep)
    cats = rep.categories
    fig, ax = plt.subplots(figsize=(max(6.0, 1.4 * len(cats) + 0.4 * len(lb)), 3.6), dpi=110)
    width = 0.8 / max(1, len(lb))
    for i, row in enumerate(lb):
        vals = [row[c] if row[c] is not None else 0.0 for c in cats]
        xs = [k + (i - (len(lb) - 1) / 2) * width for k in range(len(cats))]
        bars = ax.bar(xs, vals, width, label=row["agent"])
        for x, c, b in zip(xs, cats, bars, strict=True):
            if row[c] is None:  # a category without a score is shown as such, not as a zero
                b.set_hatch("//")
                b.set_alpha(0.25)
                ax.text(x, 0.02, "n/a", ha="center", va="bottom", fontsize=6, rotation=90)
    ax.set_xticks(range(len(cats)))
    ax.set_xticklabels(cats)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("mean category score")
    ax.set_title(f"Per-category profile (scoring {rep.sid})", fontsize=9)
    ax.legend(fontsize=7, ncol=min(4, max(1, len(lb))), loc="upper center", bbox_to_anchor=(0.5, -0.12))
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


# ----------------------------------------------------------------------------- markdown


def _fmt(x: object, nd: int = 1) -> str:
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return "—"
    return f"{x:.{nd}f}" if isinstance(x, float) else str(x)


def _comp(x: float | None, partial: bool) -> str:
    return _fmt(x) + ("*" if partial and x is not None else "")


def markdown(h5_path: Path, scoring_id: str | None = None, plot_file: str | None = None) -> str:
    rep = load(h5_path, scoring_id)
    sid = rep.sid
    lines = [f"# hpcbench report: {Path(h5_path).parent.name}", "",
             f"Scoring `{sid}` of `{h5_path}`. Every number below names its source, an HDF5 path in that file; "
             f"`hpcbench explain {rep.campaign} PATH` prints the value there and how it was derived.", ""]
    lines += [f"- {k}: {v}" for k, v in rep.provenance.items()] + [""]
    lb = leaderboard(rep)
    cats = rep.categories
    lines += ["## Leaderboard", "",
              "Mean composite (0-100) over each agent's attempts, its spread (sample standard deviation), the share "
              "of attempts passing every gate, and mean category scores (0-1). `*`: some composites are partial.", "",
              "| agent | n | composite | spread | gate pass | " + " | ".join(cats) + " | source |",
              "|---|---|---|---|---|" + "---|" * len(cats) + "---|"]
    for r in lb:
        lines.append(f"| {r['agent']} | {r['submissions']} | {_comp(r['composite_mean'], bool(r['partial']))} | "
                     f"{_fmt(r['composite_std'])} | {r['gate_pass_rate']:.0%} | "
                     + " | ".join(_fmt(r[c], 2) for c in cats) + f" | `{r['source']}` |")
    partial = sorted({c for r in rep.scored if r["partial"] for c in r["left_out"]})
    if partial:
        lines += ["", f"\\* Partial composites leave out: {', '.join(partial)} (no scored evaluator in that "
                      "category, e.g. no judge configured; weights renormalised over the rest, never counted as "
                      "zero)."]
    unscored = sorted({e for r in rep.scored if r["partial"] for e in r.get("unscored", [])})
    if unscored:
        lines += ["", f"Unscored evaluators left out of some composites: {', '.join(unscored)} "
                      "(reasons in each submission's /scores/.../evaluators/<name> rationale)."]
    if plot_file:
        lines += ["", f"![per-category profile]({plot_file})", "",
                  f"Plot: leaderboard category means, from `/scores/{sid}/*/*/*@categories`."]
    agents, problems, cells = per_problem(rep)
    if problems:
        lines += ["", "## Per problem", "",
                  f"Mean composite of each agent on each problem (attempts in brackets). Source of a cell: "
                  f"`/scores/{sid}/<agent>/<problem>`.", "",
                  "| problem | " + " | ".join(agents) + " |", "|---|" + "---|" * len(agents)]
        for p in problems:
            tds = []
            for a in agents:
                c = cells.get((a, p))
                tds.append("" if c is None else f"{_comp(c['mean'], c['partial'])} ({c['n']})")
            lines.append(f"| {p} | " + " | ".join(tds) + " |")
    stages, reasons = taxonomy(rep)
    if stages:
        lines += ["", "## Failure taxonomy", "",
                  "How far each attempt got (cumulative: an attempt that ran was also generated and compiled), "
                  f"from the gates in `/scores/{sid}/<agent>/<problem>/<attempt>/evaluators`.", "",
                  "| agent | attempts | " + " | ".join(STAGES) + " |", "|---|---|" + "---|" * len(STAGES)]
        for a, sc in sorted(stages.items()):
            total = sum(sc.values())
            lines.append(f"| {a} | {total} | " + " | ".join(str(reached(sc, s)) for s in STAGES) + " |")
        all_reasons = sorted({k for v in reasons.values() for k in v})
        lines += ["", "Why each attempt stopped:", "",
                  "| agent | " + " | ".join(all_reasons) + " |", "|---|" + "---|" * len(all_reasons)]
        for a, rc in sorted(reasons.items()):
            lines.append(f"| {a} | " + " | ".join(str(rc.get(k, 0)) for k in all_reasons) + " |")
    refs = refusals(rep)
    if refs:
        lines += ["", "## Refusals", "",
                  "Problems whose right answer is to decline (outside the composite), and refusals of solvable "
                  "problems.", "", "| agent | problem | attempt | should refuse | refused | score | why | source |",
                  "|---|---|---|---|---|---|---|---|"]
        for x in refs:
            why = x["rationale"].replace("|", "/").replace("\n", " ")[:140]
            lines.append(f"| {x['agent']} | {x['problem']} | {x['attempt']} | {'yes' if x['should_refuse'] else 'no'}"
                         f" | {'yes' if x['refused'] else 'no'} | {_fmt(x['score'], 2)} | {why} | `{x['source']}` |")
    lines += ["", "## Submissions", "",
              "| agent | problem | attempt | reached | gates | composite | tier | why | source |",
              "|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(rep.rows, key=lambda r: (r["problem"], r["agent"], r["attempt"])):
        gates = "refused" if r["refused"] else "refusal set" if r["refusal_set"] else (
            "pass" if r["gates_passed"] else f"FAIL {r['failed_gate']}")
        why = (r["why"] or ("" if r["stop_reason"] == "complete" else r["stop_reason"]))
        why = why.replace("|", "/").replace("\n", " ")[:140]
        left = f" (leaves out {', '.join(r['left_out'])})" if r["partial"] else ""
        lines.append(f"| {r['agent']} | {r['problem']} | {r['attempt']} | {r['stage']} | {gates} | "
                     f"{_fmt(r['composite'])}{left} | {r['tier']} | {why} | `{r['source']}` |")
    cost_rows = costs(rep)
    if cost_rows:
        lines += ["", "## Tokens and cost per case", "",
                  "Generation from each submission's `submission.json` (`<submission>@submission_json`), judging "
                  "summed over its evaluators (`/scores/.../evaluators/*@cost_usd`); blank where none (hand-written "
                  "submissions, no judge).", "",
                  "| agent | problem | attempt | prompt tok | completion tok | gen USD | latency s | turns "
                  "| judge tok | judge USD |", "|---|---|---|---|---|---|---|---|---|---|"]
        for c in cost_rows:
            def blank(v: float, nd: int = 0) -> str:
                return "" if not v else (f"{v:.{nd}f}" if nd else str(int(v)))
            lines.append(f"| {c['agent']} | {c['problem']} | {c['attempt']} | {blank(c['prompt_tokens'])} | "
                         f"{blank(c['completion_tokens'])} | {blank(c['cost_usd'], 4)} | {blank(c['latency_s'], 1)} "
                         f"| {blank(c['turns'])} | {blank(c['judge_tokens'])} | {blank(c['judge_cost_usd'], 4)} |")
        tot = sum(c["cost_usd"] for c in cost_rows)
        jt = sum(c["judge_cost_usd"] for c in cost_rows)
        lines += ["", f"Total: generation {tot:.4f} USD, judging {jt:.4f} USD."]
    lines += agreement.markdown_lines(h5_path, sid)  # empty unless a scoring by another judge exists
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- html

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em;color:#222;max-width:1200px}
table{border-collapse:collapse;margin:0.6em 0 1.4em;font-size:0.88em}
th,td{border:1px solid #ccc;padding:0.25em 0.55em;text-align:left}
th{background:#f0f3f7} td.num{text-align:right;font-variant-numeric:tabular-nums}
td[data-source]{cursor:help} code{font-size:0.92em;background:#f6f6f6;padding:0 0.2em}
.fail{color:#a00}.pass{color:#070}.partial{color:#a60} .note{color:#555;font-size:0.9em}
"""


def _e(x: object) -> str:
    return html.escape(str(x), quote=True)


def _td(value: str, rep: Report, source: str = "", cls: str = "num") -> str:
    """A number cell that names its source (tooltip and data attribute)."""
    if not source:
        return f"<td class='{cls}'>{_e(value)}</td>"
    title = f"source: {source}\nre-derive: {rep.explain(source.split('@')[0])}"
    return f"<td class='{cls}' data-source='{_e(source)}' title='{_e(title)}'>{_e(value)}</td>"


def _table(head: list[str], body: list[str], tid: str = "") -> str:
    ths = "".join(f"<th>{_e(h)}</th>" for h in head)
    return f"<table{f' id={chr(39)}{tid}{chr(39)}' if tid else ''}><thead><tr>{ths}</tr></thead><tbody>" + \
        "".join(f"<tr>{b}</tr>" for b in body) + "</tbody></table>"


def to_html(h5_path: Path, scoring_id: str | None = None) -> str:
    rep = load(h5_path, scoring_id)
    sid, cats = rep.sid, rep.categories
    parts = [f"<h1>hpcbench report: {_e(Path(h5_path).parent.name)}</h1>",
             f"<p>Scoring <code>{_e(sid)}</code> of <code>{_e(h5_path)}</code>. Every number names its source: hover "
             f"a cell for the HDF5 path and the command that re-derives it "
             f"(<code>hpcbench explain {_e(rep.campaign)} PATH</code>).</p>",
             "<ul>" + "".join(f"<li>{_e(k)}: {_e(v)}</li>" for k, v in rep.provenance.items()) + "</ul>"]
    lb = leaderboard(rep)
    body = []
    for r in lb:
        src = r["source"]
        comp = _comp(r["composite_mean"], bool(r["partial"]))
        body.append(f"<td>{_e(r['agent'])}</td>" + _td(str(r["submissions"]), rep, src)
                    + _td(comp, rep, f"{src}@composite_mean", "num partial" if r["partial"] else "num")
                    + _td(_fmt(r["composite_std"]), rep, f"{src}@composite_std")
                    + _td(f"{r['gate_pass_rate']:.0%}", rep, f"{src}@gate_pass_rate")
                    + "".join(_td(_fmt(r[c], 2), rep, f"{src}@{c}") for c in cats)
                    + f"<td><code>{_e(src)}</code></td>")
    parts += ["<h2>Leaderboard</h2>",
              "<p class='note'>Mean composite (0-100) over each agent's attempts, spread (sample standard deviation), "
              "share of attempts passing every gate, mean category scores (0-1). * partial composite.</p>",
              _table(["agent", "n", "composite", "spread", "gate pass", *cats, "source"], body, "leaderboard")]
    partial = sorted({c for r in rep.scored if r["partial"] for c in r["left_out"]})
    if partial:
        parts.append(f"<p class='partial'>* Partial composites leave out: {_e(', '.join(partial))} (no scored "
                     "evaluator in that category; weights renormalised over the rest, never counted as zero).</p>")
    if lb:
        png = base64.b64encode(profile_png(rep)).decode()
        parts += ["<h2>Per-category profile</h2>",
                  f"<img id='profile' alt='per-category profile' src='data:image/png;base64,{png}'>",
                  f"<p class='note'>From <code>/scores/{_e(sid)}/*/*/*@categories</code> (leaderboard means).</p>"]
    agents, problems, cells = per_problem(rep)
    if problems:
        body = []
        for p in problems:
            tds = "".join(_td(f"{_comp(c['mean'], c['partial'])} ({c['n']})", rep, c["source"]) if c else "<td></td>"
                          for c in (cells.get((a, p)) for a in agents))
            body.append(f"<td>{_e(p)}</td>{tds}")
        parts += ["<h2>Per problem</h2>", "<p class='note'>Mean composite (attempts).</p>",
                  _table(["problem", *agents], body, "per-problem")]
    stages, reasons = taxonomy(rep)
    if stages:
        body = [f"<td>{_e(a)}</td>" + _td(str(sum(sc.values())), rep, f"/scores/{sid}/{a}")
                + "".join(_td(str(reached(sc, s)), rep, f"/scores/{sid}/{a}") for s in STAGES)
                for a, sc in sorted(stages.items())]
        all_reasons = sorted({k for v in reasons.values() for k in v})
        body2 = [f"<td>{_e(a)}</td>" + "".join(_td(str(rc.get(k, 0)), rep, f"/scores/{sid}/{a}")
                                                 for k in all_reasons) for a, rc in sorted(reasons.items())]
        parts += ["<h2>Failure taxonomy</h2>", "<p class='note'>How far each attempt got (cumulative).</p>",
                  _table(["agent", "attempts", *STAGES], body, "taxonomy-stage"),
                  "<p class='note'>Why each attempt stopped.</p>",
                  _table(["agent", *all_reasons], body2, "taxonomy-reason")]
    refs = refusals(rep)
    if refs:
        body = [f"<td>{_e(x['agent'])}</td><td>{_e(x['problem'])}</td><td>{_e(x['attempt'])}</td>"
                f"<td>{'yes' if x['should_refuse'] else 'no'}</td><td>{'yes' if x['refused'] else 'no'}</td>"
                + _td(_fmt(x["score"], 2), rep, x["source"]) + f"<td>{_e(x['rationale'][:200])}</td>" for x in refs]
        parts += ["<h2>Refusals</h2>", _table(["agent", "problem", "attempt", "should refuse", "refused", "score",
                                               "why"], body, "refusals")]
    body = []
    for r in sorted(rep.rows, key=lambda r: (r["problem"], r["agent"], r["attempt"])):
        gates = "refused" if r["refused"] else "refusal set" if r["refusal_set"] else (
            "pass" if r["gates_passed"] else f"FAIL {r['failed_gate']}")
        gcls = "pass" if gates == "pass" else "fail" if gates.startswith("FAIL") else ""
        left = f" (leaves out {', '.join(r['left_out'])})" if r["partial"] else ""
        why = r["why"] or ("" if r["stop_reason"] == "complete" else r["stop_reason"])
        body.append(f"<td>{_e(r['agent'])}</td><td>{_e(r['problem'])}</td><td>{_e(r['attempt'])}</td>"
                    f"<td>{_e(r['stage'])}</td><td class='{gcls}'>{_e(gates)}</td>"
                    + _td(_fmt(r["composite"]) + left, rep, f"{r['source']}@composite")
                    + f"<td>{_e(r['tier'])}</td><td>{_e(why[:200])}</td><td><code>{_e(r['source'])}</code></td>")
    parts += ["<h2>Submissions</h2>",
              _table(["agent", "problem", "attempt", "reached", "gates", "composite", "tier", "why", "source"], body,
                     "submissions")]
    body = []
    for c in costs(rep):
        def v(x: float, nd: int = 0) -> str:
            return "" if not x else (f"{x:.{nd}f}" if nd else str(int(x)))
        body.append(f"<td>{_e(c['agent'])}</td><td>{_e(c['problem'])}</td><td>{_e(c['attempt'])}</td>"
                    + _td(v(c["prompt_tokens"]), rep, c["source"]) + _td(v(c["completion_tokens"]), rep, c["source"])
                    + _td(v(c["cost_usd"], 4), rep, c["source"]) + _td(v(c["latency_s"], 1), rep, c["source"])
                    + _td(v(c["turns"]), rep, c["source"]) + _td(v(c["judge_tokens"]), rep, c["judge_source"])
                    + _td(v(c["judge_cost_usd"], 4), rep, c["judge_source"]))
    parts += ["<h2>Tokens and cost per case</h2>",
              "<p class='note'>Generation from submission.json; judging summed over evaluators; blank where none.</p>",
              _table(["agent", "problem", "attempt", "prompt tok", "completion tok", "gen USD", "latency s", "turns",
                      "judge tok", "judge USD"], body, "costs")]
    other = agreement.partner(h5_path, sid)
    if other is not None:
        ag = agreement.agreement(h5_path, sid, other)
        body = []
        for r in ag["rows"]:
            nd = 1 if r["name"] == "composite" else 3
            body.append(f"<td>{_e(r['name'])}</td>" + "".join(
                _td(_fmt(r[k], nd) if k != "n" and k != "only_one" else str(r[k]), rep, ag["source"])
                for k in ("n", "mean_a", "mean_b", "mean_abs_diff", "max_abs_diff", "only_one")))
        parts += ["<h2>Judge agreement</h2>",
                  f"<p class='note'><code>{_e(sid)}</code> (judge <code>{_e(ag['judge_a'])}</code>) vs "
                  f"<code>{_e(other)}</code> (judge <code>{_e(ag['judge_b'])}</code>) on byte-identical prompts; "
                  f"re-derive with <code>hpcbench agreement {_e(rep.campaign)} --scoring {_e(sid)} --against "
                  f"{_e(other)}</code>.</p>",
                  _table(["evaluator", "n", "mean A", "mean B", "mean abs diff", "max abs diff", "scored by one only"],
                         body, "agreement")]
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>hpcbench report {_e(Path(h5_path).parent.name)}</title><style>{_CSS}</style></head><body>"
            + "\n".join(parts) + "</body></html>\n")


# ----------------------------------------------------------------------------- json / csv


def to_json(h5_path: Path, scoring_id: str | None = None) -> str:
    rep = load(h5_path, scoring_id)
    agents, problems, cells = per_problem(rep)
    stages, reasons = taxonomy(rep)
    other = agreement.partner(h5_path, rep.sid)
    return json.dumps({
        "scoring_id": rep.sid, "campaign": rep.campaign, "provenance": rep.provenance, "weights": rep.weights,
        "leaderboard": leaderboard(rep),
        "per_problem": [{"agent": a, "problem": p, **c} for (a, p), c in sorted(cells.items())],
        "taxonomy": {"stages": STAGES, "reached": {a: {s: reached(sc, s) for s in STAGES}
                                                   for a, sc in sorted(stages.items())},
                     "stage_counts": stages, "stop_reasons": reasons},
        "costs": costs(rep), "refusals": refusals(rep), "submissions": rep.rows,
        "agreement": agreement.agreement(h5_path, rep.sid, other) if other else None,
    }, indent=1, default=str)


def to_csv(h5_path: Path, scoring_id: str | None = None) -> str:
    import csv

    rep = load(h5_path, scoring_id)
    evs = sorted({n for r in rep.rows for n in r["evaluators"]})
    head = ["agent", "problem", "attempt", "status", "refused", "refusal_set", "gates_passed", "failed_gate",
            "composite", "tier", "partial", "left_out", "stage", "stop_reason", "build_s", "run_s",
            *[f"cat_{c}" for c in rep.categories], *[f"ev_{n}" for n in evs],
            "prompt_tokens", "completion_tokens", "cost_usd", "judge_cost_usd", "source", "explain"]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(head)
    for r in rep.rows:
        g = r["generation"]
        w.writerow([r["agent"], r["problem"], r["attempt"], r["status"], r["refused"], r["refusal_set"],
                    r["gates_passed"], r["failed_gate"], "" if r["composite"] is None else f"{r['composite']:.4f}",
                    r["tier"], r["partial"], ";".join(r["left_out"]), r["stage"], r["stop_reason"],
                    "" if r["build_s"] is None else f"{r['build_s']:.3f}",
                    "" if r["run_s"] is None else f"{r['run_s']:.3f}",
                    *["" if r["categories"].get(c) is None else f"{r['categories'][c]:.4f}" for c in rep.categories],
                    *["" if r["evaluators"].get(n, {}).get("score") is None else f"{r['evaluators'][n]['score']:.4f}"
                      for n in evs],
                    g.get("prompt_tokens") or 0, g.get("completion_tokens") or 0, g.get("cost_usd") or 0.0,
                    r["judge_cost"]["cost_usd"], r["source"], r["explain"]])
    return buf.getvalue()


def render(h5_path: Path, fmt: str, scoring_id: str | None = None) -> str:
    return {"md": markdown, "json": to_json, "csv": to_csv, "html": to_html}[fmt](h5_path, scoring_id)


def write(h5_path: Path, fmt: str, out: Path, scoring_id: str | None = None) -> list[Path]:
    """Write a report file; markdown gets its profile plot as a PNG beside it
    (HTML embeds it). Returns the files written."""
    out = Path(out)
    if fmt != "md":
        out.write_text(render(h5_path, fmt, scoring_id))
        return [out]
    rep = load(h5_path, scoring_id)
    written = [out]
    plot = None
    if leaderboard(rep):
        png = out.with_name(f"{out.stem}-profile.png")
        png.write_bytes(profile_png(rep))
        plot, written = png.name, [out, png]
    out.write_text(markdown(h5_path, rep.sid, plot_file=plot))
    return written
