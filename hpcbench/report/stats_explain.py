"""`hpcbench explain CAMPAIGN /stats/<scoring>/...`: an interval, a paired difference, a
rank range, pass@k or the detectable difference, drawn again from the scoring's rows
with the seed and resamples the scoring recorded, shown step by step and compared with
what the scoring stored ("match" or "MISMATCH").

    /stats/<id>                          settings and what is there
    /stats/<id>/agents/<agent>[/<measure>]   composite (default), pass or a category
    /stats/<id>/pairs/<a>/<b>            paired difference a - b of the composite
    /stats/<id>/ranks/<agent>            rank range from Holm's tests over all pairs
    /stats/<id>/pass_at_k/<agent>[/<problem>]
    /stats/<id>/power                    minimum detectable difference"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from hpcbench.score import uncertainty
from hpcbench.stats import analysis, passk, power
from hpcbench.stats.analysis import COMPOSITE, PASS
from hpcbench.stats.intervals import PROBLEMS, Settings, established
from hpcbench.stats.ranks import label, rank_ranges
from hpcbench.store.scorings import Scoring

KINDS = ["agents", "pairs", "ranks", "pass_at_k", "power"]


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is b
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-9)  # type: ignore[arg-type]
    return a == b


def verdict(derived: dict, stored: dict | None, keys: Sequence[str]) -> str:
    if stored is None:
        return "not stored with this scoring (written before hpcbench stored its statistics): derived only"
    bad = [k for k in keys if not _same(derived.get(k), stored.get(k))]
    if not bad:
        return "derived again, stored: match"
    return "MISMATCH: " + "; ".join(f"{k} derived {derived.get(k)!r}, stored {stored.get(k)!r}" for k in bad)


def _fmt(x: float | None, nd: int = 4) -> str:
    return "—" if x is None else f"{x:.{nd}f}"


class StatsView:
    """One scoring's rows and stored document, the way explain walks them."""

    def __init__(self, root: Path, scoring: Scoring) -> None:
        self.sid = scoring.sid
        self.doc = uncertainty.load_uncertainty(root, scoring.sid, scoring.rows)
        self.stored = self.doc.get("stored", False)
        # a document stored before one estimand and Holm (its method names neither): derived now by
        # the current method, which need not give what the bootstrap then drew
        self.earlier = self.stored and "Holm" not in str(self.doc.get("settings", {}).get("method", ""))
        self.settings: Settings = uncertainty.settings_of(self.doc)
        self.all_groups = analysis.by_agent(uncertainty.attempts_from_rows(scoring.rows))
        # every agent on the problems every agent attempted, as analyse_uncertainty measures them
        self.groups, self.common = analysis.common_groups(self.all_groups)
        self.categories = list(scoring.weights) or []

    def verdict(self, derived: dict, stored: dict | None, keys: Sequence[str]) -> str:
        if self.earlier:
            return ("stored by an earlier method (a bootstrap; orders without a correction for the number of pairs): "
                    "derived now by the current one, not compared; score again to store it")
        return verdict(derived, stored, keys)

    def children(self, rest: list[str]) -> list[str] | None:
        """Names below a path (None: no such path)."""
        if not rest:
            return KINDS
        kind, more = rest[0], rest[1:]
        agents = sorted(self.groups)
        if kind in ("agents", "ranks", "pass_at_k", "pairs") and not more:
            return agents
        if kind == "agents" and len(more) == 1 and more[0] in self.groups:
            return [COMPOSITE, PASS, *self.categories]
        if kind == "pairs" and len(more) == 1 and more[0] in self.groups:
            return [b for b in agents if b > more[0]]
        if kind == "pass_at_k" and len(more) == 1 and more[0] in self.groups:
            return sorted({a.problem for a in self.all_groups[more[0]]})
        return None

    def leaf(self, rest: list[str]) -> bool:
        """A path that names one reported item."""
        if rest == ["power"]:
            return True
        if len(rest) < 2 or rest[1] not in self.groups:
            return False
        kind, more = rest[0], rest[1:]
        if kind == "ranks":
            return len(more) == 1
        if kind == "agents":
            return len(more) == 1 or (len(more) == 2 and more[1] in (COMPOSITE, PASS, *self.categories))
        if kind == "pairs":
            return len(more) == 2 and more[1] in self.groups and more[0] < more[1]
        if kind == "pass_at_k":
            return len(more) == 1 or (len(more) == 2 and more[1] in {a.problem for a in self.all_groups[more[0]]})
        return False

    def stored_item(self, rest: list[str]) -> dict | None:
        """The stored values at a leaf path, for `@field` and the comparison."""
        if not self.stored:
            return None
        kind, more = rest[0], rest[1:]
        if kind == "agents":
            entry = self.doc["agents"].get(more[0], {})
            measure = more[1] if len(more) > 1 else COMPOSITE
            return entry.get(measure) if measure in (COMPOSITE, PASS) else entry.get("categories", {}).get(measure)
        if kind == "pairs":
            return next((p[COMPOSITE] for p in self.doc["pairs"] if (p["a"], p["b"]) == (more[0], more[1])), None)
        if kind == "ranks":
            return self.doc["agents"].get(more[0], {}).get("rank")
        if kind == "pass_at_k":
            if len(more) == 1:
                return {"table": self.doc["agents"].get(more[0], {}).get("pass_at_k")}
            return next((r for r in self.doc["pass_at_k"] if (r["agent"], r["problem"]) == (more[0], more[1])), None)
        if kind == "power":
            return self.doc.get("power", {}).get("detectable")
        return None

    def explain(self, rest: list[str]) -> list[str]:
        if not rest:
            return self.overview()
        kind, more = rest[0], rest[1:]
        how = {"agents": self.agent, "pairs": self.pair, "ranks": self.rank, "pass_at_k": self.pass_at_k}
        if kind == "power" and not more:
            return self.power()
        if kind in how and more and (kind != "pairs" or len(more) == 2):
            return how[kind](more)
        return [f"/stats/{self.sid}/{'/'.join(rest)}: " + ", ".join(self.children(rest) or [])]

    def overview(self) -> list[str]:
        s = self.doc["settings"]
        return [f"statistics of scoring {self.sid} ({'stored with it' if self.stored else 'derived now: not stored'})",
                f"seed {s['seed']}, {s['resamples']} resamples, level {s['level']}, "
                f"{s['min_units']} units for an interval", f"method: {s['method']}",
                f"{len(self.groups)} agents, {sum(len(v) for v in self.groups.values())} attempts "
                f"({self.doc.get('excluded', 0)} without a composite left out)", "",
                *[f"  {k}" for k in KINDS]]

    def agent(self, more: list[str]) -> list[str]:
        agent = more[0]
        measure = more[1] if len(more) > 1 else COMPOSITE
        mine = self.groups.get(agent)
        if mine is None:
            raise LookupError(f"/stats/{self.sid}/agents: no agent {agent!r}")
        cells = analysis.cells(mine, measure)
        got = analysis.agent_interval(mine, agent, measure, self.settings)
        lines = [f"{measure} of {agent}: mean over {len(cells)} problem(s) of each problem's mean over its attempts"]
        lines += _cells_lines(cells)
        lines += _interval_lines(got, self.settings, f"agent/{agent}/{measure}")
        if got.get("judge_share") is not None:
            lines.append(f"judge share of the interval's variance: {got['judge_share']:.3f} "
                         "(hpcbench.stats.judge_noise; the rest: attempts and problems)")
        return lines + ["", self.verdict(got, self.stored_item(["agents", *more]),
                                    ["estimate", "low", "high", "scope", "standard_error",
                                                                   "judge_share"])]

    def pair(self, more: list[str]) -> list[str]:
        a, b = more
        if a not in self.groups or b not in self.groups:
            raise LookupError(f"/stats/{self.sid}/pairs: no agents {a!r} and {b!r}")
        iv, got = analysis.pair_interval(self.groups[a], self.groups[b], a, b, self.settings)
        ca, cb = analysis.cells(self.groups[a], COMPOSITE), analysis.cells(self.groups[b], COMPOSITE)
        shared = sorted(set(ca) & set(cb))
        lines = [f"composite of {a} - {b}, over the {len(shared)} problem(s) both attempted "
                 "(the same problems drawn for both)"]
        for p in shared:
            lines.append(f"  {p:24s} {sum(ca[p]) / len(ca[p]):8.3f} ({len(ca[p])}) - {sum(cb[p]) / len(cb[p]):8.3f} "
                         f"({len(cb[p])})")
        lines += _interval_lines(got, self.settings, f"pair/{a}/{b}/composite")
        if iv.p_value is not None:
            lines.append(f"two-sided p (t({iv.problems - 1})) = {iv.p_value:.4g}; the leaderboard's order is Holm's "
                         f"over all pairs: /stats/{self.sid}/ranks/{a}")
        lines.append("order alone (one planned comparison): "
                     + {1: f"{a} above {b}", -1: f"{b} above {a}", 0: "not established"}[established(iv)])
        return lines + ["", self.verdict(got, self.stored_item(["pairs", a, b]),
                                    ["estimate", "low", "high", "scope", "standard_error"])]

    def rank(self, more: list[str]) -> list[str]:
        agent = more[0]
        if agent not in self.groups:
            raise LookupError(f"/stats/{self.sid}/ranks: no agent {agent!r}")
        agents = sorted(self.groups)
        rows, order = analysis.ordered(self.groups, agents, self.settings, self.sid)
        lines = [f"rank of {agent}: 1 + agents established above it .. {len(agents)} - agents established below "
                 f"(established: Holm's step-down over all {len(rows)} pairs' t tests rejects equal means at 5%)"]
        for row in rows:
            a, b = row["a"], row["b"]
            if agent in (a, b):
                other = b if a == agent else a
                sign = order[(a, b)] if a == agent else -order[(a, b)]
                c = row[COMPOSITE]
                verdict_ = {1: "above", -1: "below", 0: "not established"}[sign]
                lines.append(f"  vs {other:24s} [{_fmt(c['low'], 2)}, {_fmt(c['high'], 2)}] p {_fmt(c['p_value'])} "
                             f"Holm p {_fmt(row['p_holm'])} -> {verdict_}")
        best, worst = rank_ranges(agents, order)[agent]
        got = {"best": best, "worst": worst, "label": label(best, worst)}
        lines.append(f"rank {got['label']}")
        return lines + ["", self.verdict(got, self.stored_item(["ranks", agent]), ["best", "worst"])]

    def pass_at_k(self, more: list[str]) -> list[str]:
        agent = more[0]
        mine = self.groups.get(agent)
        if mine is None:
            raise LookupError(f"/stats/{self.sid}/pass_at_k: no agent {agent!r}")
        if len(more) == 1:
            k = analysis.most_k(self.groups, self.common) if self.common else None
            table = passk.agent_table(analysis.pass_passes(mine), k, self.settings)
            lines = [f"pass@k of {agent}: mean over the {len(self.common)} problems every agent attempted of "
                     f"1 - C(n-c,k)/C(n,k), k up to the fewest attempts on one ({k}); interval over problems"]
            lines += [f"  k={t['k']}: {t['value']:.4f} [{_fmt(t['low'])}, {_fmt(t['high'])}] over {t['problems']} "
                      "problem(s)" for t in table]
            stored = self.stored_item(["pass_at_k", agent])
            return lines + ["", self.verdict({"table": table}, stored, ["table"])]
        rows = [r for r in analysis.pass_at_k_rows(self.all_groups[agent], agent, self.sid) if r["problem"] == more[1]]
        if not rows:
            raise LookupError(f"/stats/{self.sid}/pass_at_k/{agent}: no problem {more[1]!r}")
        r = rows[0]
        flags = " ".join("P" if a.passed else "." for a in self.all_groups[agent] if a.problem == more[1])
        lines = [f"pass@k of {agent} on {more[1]}: n = {r['n']} attempts, c = {r['c']} passed every gate and "
                 f"hidden check ({flags})"]
        lines += [f"  k={k}: 1 - C({r['n'] - r['c']},{k})/C({r['n']},{k}) = {v:.4f}"
                  for k, v in enumerate(r["values"], 1)]
        return lines + ["", verdict(r, self.stored_item(["pass_at_k", *more]), ["n", "c", "values"])]

    def power(self) -> list[str]:
        comp = power.components({a: analysis.cells(m, COMPOSITE) for a, m in self.groups.items()},
                                passes={a: analysis.pass_passes(m) for a, m in self.groups.items()},
                                level=self.settings.level)
        pairs = analysis.pair_count(len(self.groups))
        lines = ["minimum detectable difference of the composite between two agents (80% power, two-sided)",
                 f"  spread of attempts within a problem s_w^2 = {_fmt(comp.within, 3)} (df {comp.within_df})",
                 f"  agent-by-problem interaction s_g^2 = {_fmt(comp.interaction, 3)} over {comp.pairs} pair(s)",
                 f"  design: {comp.problems} shared problem(s), {comp.attempts} attempt(s) per agent and problem"]
        try:
            got = power.detectable(comp, comp.problems, max(1, comp.attempts), self.settings, pairs=pairs)
        except ValueError as e:
            lines.append(f"  cannot say: {e}")
            if not self.stored:
                return lines
            stored = self.stored_item(["power"])
            return lines + ["", "derived again, stored: match" if stored is None else
                            f"MISMATCH: difference derived none, stored {stored.get('difference')!r}"]
        formula = ("var(differences) / P" if comp.differences else "(2 s_g^2 + 2 s_w^2 / n) / P")
        small = power.small_sample(comp, comp.problems, max(1, comp.attempts))
        fix = f" x {small:.4f} (one attempt each, or fewer than 6 problems)" * (small != 1.0)
        lines += [f"  standard error of two level agents = sqrt({formula}){fix} = {got['level_standard_error']:.4f}",
                  f"  x sqrt(spread at the gap / spread level = {got['spread_factor']:.3f}) (pass rate "
                  f"{_fmt(comp.pass_rate, 3)}, {_fmt(comp.pass_slope, 1)} points per pass) = "
                  f"{got['standard_error']:.4f}",
                  f"  level 5% / {pairs} pair(s) = {1 - got['pair_level']:.4g} two-sided (Holm's first step)",
                  _shape_line(comp, got["shape_factor"]),
                  f"  (t_(1-a/2) + t_(power) x {got['shape_factor']:.3f}) with {got['df']} df = "
                  f"{got['multiplier']:.4f}",
                  f"  detectable difference = {got['difference']:.3f} composite points"]
        if self.stored and not self.earlier and (was := self.doc.get("power", {}).get("method")) != power.METHOD:
            was = was or "the components with s_g^2 clipped at 0, median-unbiased at every design"
            return lines + ["", f"stored by an earlier power method ({was}): derived now by the current one, not "
                            "compared; score again to store it"]
        return lines + ["", self.verdict(got, self.stored_item(["power"]), ["difference", "standard_error", "df"])]


def _shape_line(comp: power.Components, factor: float) -> str:
    if comp.skew is None or comp.kurtosis is None:
        return "  shape of the differences: no pair established, Student's t as it is (factor 1)"
    return (f"  shape of one problem's difference over {comp.shape_pairs} established pair(s): skew "
            f"{comp.skew:+.3f} toward the better agent, kurtosis {comp.kurtosis:.3f}: the test's statistic "
            f"spreads {factor:.3f} x what t says (shape_factor)")


def _cells_lines(cells: dict[str, list[float]]) -> list[str]:
    out = []
    for p, v in sorted(cells.items()):
        shown = " ".join(f"{x:.3g}" for x in v[:12]) + (" ..." if len(v) > 12 else "")
        out.append(f"  {p:24s} {len(v):3d} attempts: {shown} -> mean {sum(v) / len(v):.4f}")
    return out


def _interval_lines(got: dict, settings: Settings, key: str) -> list[str]:
    note = f" ({got['note']})" if got["note"] else ""
    lines = [f"estimate {_fmt(got['estimate'])}", f"scope: {got['scope']}{note}"]
    if got["scope"] != PROBLEMS:
        return lines
    p = got["problems"]
    lines.append(f"  over {p} problems: standard error sd / sqrt({p}) = {_fmt(got['standard_error'])}")
    if key.startswith("pair/"):
        lines.append(f"  Student t({p - 1}) interval on the problems' differences = [{_fmt(got['low'])}, "
                     f"{_fmt(got['high'])}]")
    else:
        lines.append(f"  bounded: Clopper-Pearson at level {settings.level} on the Korn-Graubard effective sample "
                     "size of the problem means (scaled to [0, 1]; at most 3 per problem and 1 per attempt, times "
                     f"(z/t({p - 1}))^2) = [{_fmt(got['low'])}, {_fmt(got['high'])}]")
    return lines
