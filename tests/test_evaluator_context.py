"""Evaluators read only their EvalContext: no evaluator module imports the stages above it
(report, store, sweep, score, ...) or keeps a cache of anything but its own arguments, and the
scalability metric scores from the sweep points the scoring stage put in the context."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest

from hpcbench.evaluators.base import EvalContext, ScalingPoint
from hpcbench.evaluators.metrics.scalability import NOISY_CONFIDENCE, OVERSUBSCRIBED_CONFIDENCE, Scalability
from hpcbench.problem import load_problem, load_problems
from hpcbench.submission import Submission

ROOT = Path(__file__).resolve().parent.parent
# What an evaluator may import from hpcbench: its own package, the input models and the
# job records they are built from, and the judge's prompt machinery (judged evaluators).
ALLOWED = ("hpcbench.evaluators", "hpcbench.jobs.records", "hpcbench.problem", "hpcbench.submission",
           "hpcbench.errors", "hpcbench.registry", "hpcbench.petsc_headers", "hpcbench.judge")
MEMO = {"lru_cache", "cache"}


def hpcbench_imports(tree: ast.Module) -> list[tuple[str, int]]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            out.append((node.module or "", node.lineno))
    return [(m, line) for m, line in out if m.split(".")[0] == "hpcbench"]


def allowed(module: str) -> bool:
    return any(module == a or module.startswith(a + ".") for a in ALLOWED)


def memoised(tree: ast.Module) -> list[ast.FunctionDef]:
    def name(d: ast.expr) -> str:
        d = d.func if isinstance(d, ast.Call) else d
        return d.attr if isinstance(d, ast.Attribute) else d.id if isinstance(d, ast.Name) else ""

    return [f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
            and any(name(d) in MEMO for d in f.decorator_list)]


def violations(files: list[Path], root: Path = ROOT) -> list[str]:
    bad = []
    for path in files:
        tree = ast.parse(path.read_text(), str(path))
        rel = path.relative_to(root)
        bad += [f"{rel}:{line}: imports {m}" for m, line in hpcbench_imports(tree) if not allowed(m)]
        bad += [f"{rel}:{n.lineno}: `global` state" for n in ast.walk(tree) if isinstance(n, ast.Global)]
        # A memo of a pure function of source text is fine (a parse shared by the evaluators of
        # one submission); one keyed on anything else (a folder, a path) caches the world.
        for f in memoised(tree):
            args = f.args.args + f.args.kwonlyargs
            if not args or any(a.annotation is None or ast.unparse(a.annotation) != "str" for a in args):
                bad.append(f"{rel}:{f.lineno}: {f.name} is memoised on something other than text")
    return bad


def test_evaluators_import_only_what_their_context_is_made_of():
    files = sorted((ROOT / "evaluators").rglob("*.py"))
    assert len(files) > 30
    bad = violations(files)
    assert not bad, "evaluators must read only their EvalContext:\n" + "\n".join(bad)


def test_the_check_finds_a_store_read_and_a_folder_cache(tmp_path):
    """Self-check on the shape the scalability metric had: sweeps read from the campaign folder
    through the store, behind an lru_cache keyed on the folder."""
    planted = tmp_path / "planted.py"
    planted.write_text("from functools import lru_cache\n"
                       "@lru_cache(maxsize=8)\n"
                       "def _points(campaign_dir: str) -> tuple:\n"
                       "    from hpcbench.store.sweeps import sweeps_of\n"
                       "    return tuple(sweeps_of(campaign_dir))\n"
                       "@lru_cache\n"
                       "def _any(where):\n"
                       "    from hpcbench.report.scaling import figure_png\n"
                       "_CACHE = {}\n"
                       "def fill(k):\n"
                       "    global _CACHE\n")
    got = violations([planted], tmp_path)
    assert sum("imports hpcbench.store.sweeps" in b for b in got) == 1
    assert sum("imports hpcbench.report.scaling" in b for b in got) == 1
    assert sum("memoised on something other than text" in b for b in got) == 1  # _any; _points is str-keyed
    assert sum("`global` state" in b for b in got) == 1


BUNDLE = load_problems(None, ["advection1d"])["advection1d"]


def point(ranks: int, rel: float, *, clean: bool = True, status: str = "ok", over: bool = False) -> ScalingPoint:
    return ScalingPoint(sweep="/c/sweeps/s1/campaign.h5", path=f"/sweep/points/a/advection1d/1/strong/100/r{ranks}-N1",
                        mode="strong", size=100, ranks=ranks, base_ranks=1, status=status, oversubscribed=over,
                        rel_clean=clean, efficiency=0.9 * rel, ref_efficiency=0.9, rel_efficiency=rel)


def evaluate(points: list[ScalingPoint]):
    meta = Submission(problem="advection1d", agent="a", attempt="1", entry="main.c", files=["main.c"])
    b = load_problem(BUNDLE.folder)
    return Scalability().evaluate(EvalContext(problem=b.problem, checks=b.checks, submission=meta, sources={},
                                              record=None, scaling=points))


def test_scalability_scores_the_largest_clean_point_of_its_context():
    res = evaluate([point(1, math.nan, clean=False), point(2, 0.8), point(4, 0.5), point(8, 0.9, clean=False)])
    assert res.status == "scored" and res.score == pytest.approx(0.5) and res.confidence == 1.0
    assert res.evidence["point"].endswith("/r4-N1") and res.evidence["sweep"] == "/c/sweeps/s1/campaign.h5"
    assert "at 4 ranks" in res.rationale


def test_scalability_without_points_is_optional_and_unscored():
    res = evaluate([])
    assert res.status == "unscored" and res.score is None and res.evidence.get("optional")


def test_scalability_without_a_clean_point_says_so_at_lower_confidence():
    over = evaluate([point(2, 0.7, clean=False, over=True)])
    assert over.confidence == OVERSUBSCRIBED_CONFIDENCE and "oversubscribed" in over.rationale
    noisy = evaluate([point(2, 0.7, clean=False), point(4, 0.6, clean=False, over=True)])
    assert noisy.confidence == NOISY_CONFIDENCE and noisy.evidence["point"].endswith("/r2-N1")
    wrong = evaluate([point(2, math.nan, clean=False, status="wrong answer")])
    assert wrong.status == "unscored" and "1 wrong answers" in wrong.rationale


# ----------------------------------------------------------------- scoring's workers, state passed explicitly

def _campaign(n: int):
    from hpcbench.store import StoredCampaign, StoredSubmission
    from tests.test_inputs import GOOD_OUT, _record

    b = load_problems(None, ["vec-scatter"])["vec-scatter"]
    source = (b.reference_dir / "main.c").read_text()  # the expert's program: past every gate
    b = load_problem(b.folder)

    def sub(agent: str, out: str, exit_code: int = 0) -> StoredSubmission:
        return StoredSubmission(f"/submissions/{agent}/vec-scatter/1",
                                Submission(problem="vec-scatter", agent=agent, entry="main.c", files=["main.c"]),
                                {"main.c": source}, _record(agent, out, exit_code=exit_code), "done")

    # every third one prints a wrong norm and exits 1: the workers' results differ from one
    # submission to the next (a wrong norm alone is capped like the published cases' literal
    # checks, which these made-up outputs fail too: the exit fails a gate)
    subs = [sub("reference", GOOD_OUT)] + [sub(f"a{i:03d}", GOOD_OUT) if i % 3 else
                                           sub(f"a{i:03d}", GOOD_OUT.replace("2.0", "7.0"), exit_code=1)
                                           for i in range(n)]
    return StoredCampaign({}, {}, {"vec-scatter": (b.problem, b.checks)}, subs)


def _summary(scores) -> list[tuple]:
    return [(sc.agent, sc.composite, sc.failed_gate,
             [(r.evaluator, r.status, r.score, r.rationale) for r in sc.results]) for sc in scores]


def test_forked_scoring_gives_what_one_process_gives():
    from hpcbench.score.scoring import score_campaign

    one = score_campaign(_campaign(120), workers=1)
    forked = score_campaign(_campaign(120), workers=2)  # 121 submissions: 2 workers (one per 50)
    assert len(one) == 121 and _summary(forked) == _summary(one)
    assert len({sc.composite for sc in one}) > 1  # the right and the wrong norms scored apart


def test_a_scoring_worker_that_dies_is_named_not_hung(monkeypatch):
    """A worker killed under it (out of memory, a native crash in a parser) ends scoring with an
    error naming the worker and the way round, never a hang or a silent gap."""
    import os

    from hpcbench.evaluators.base import EvalResult, Evaluator
    from hpcbench.score import scoring
    from hpcbench.score.scoring import score_campaign

    parent = os.getpid()

    class Dies(Evaluator):
        name, stage, category = "dies", "metric", "correctness"

        def evaluate(self, ctx: EvalContext) -> EvalResult:
            if os.getpid() != parent and ctx.submission.agent == "a050":
                os._exit(9)
            return self.result(1.0, "fine")

    every = scoring.all_evaluators()
    monkeypatch.setattr(scoring, "all_evaluators", lambda: [*every, Dies()])
    died = r"scoring worker \d+ died \(exit code 9\).*HPCBENCH_SCORE_WORKERS=1"
    with pytest.raises(scoring.HpcbenchError, match=died):
        score_campaign(_campaign(120), workers=2)
    assert len(score_campaign(_campaign(120), workers=1)) == 121  # in one process it never dies
