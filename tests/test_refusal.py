"""The refusal evaluator and the refusal set's hidden marking."""

import pytest

from hpcbench.agents.contract import render_user_prompt
from hpcbench.evaluators.base import EvalContext
from hpcbench.evaluators.refusal import Refusal
from hpcbench.problem import Checks, load_problems
from hpcbench.submission import Submission

BUNDLES = load_problems()
REFUSE = sorted(pid for pid, b in BUNDLES.items() if b.checks.expect == "refuse")


def _ctx(pid, **sub):
    b = BUNDLES[pid]
    meta = Submission(problem=pid, agent="a", **sub)
    return EvalContext(problem=b.problem, checks=b.checks, submission=meta, sources={}, record=None)


def test_refusal_set_exists_and_its_mark_stays_hidden():
    assert len(REFUSE) >= 3
    for pid in REFUSE:
        b = BUNDLES[pid]
        assert b.checks.refusal and b.checks.refusal.keywords
        public = render_user_prompt(b.problem)
        assert "expect" not in b.problem.public_view() and b.checks.refusal.why not in public
        ref = Submission.model_validate_json((b.reference_dir / "submission.json").read_text())
        assert ref.refused and not ref.files
        assert Refusal().evaluate(_ctx(pid, refused=True, refusal_reason=ref.refusal_reason)).score == 1.0


@pytest.mark.parametrize("pid,sub,score", [
    ("refuse-mumps", dict(refused=True, refusal_reason="MUMPS is not available in this build"), 1.0),
    ("refuse-mumps", dict(refused=True, refusal_reason="I would rather not."), 0.8),
    ("refuse-mumps", dict(entry="main.c", files=["main.c"]), 0.0),  # an invented program
    ("refuse-mumps", dict(generation_error="empty", generation_error_kind="no_code"), 0.0),
    ("vec-scatter", dict(refused=True, refusal_reason="too hard"), 0.0),  # over-refusal
    ("vec-scatter", dict(entry="main.c", files=["main.c"]), None),  # not applicable
])
def test_refusal_scores(pid, sub, score):
    res = Refusal().evaluate(_ctx(pid, **sub))
    assert res.category == "refusal"
    assert res.score == score and (res.status == "unscored") == (score is None), res.rationale


def test_checks_shape_is_validated():
    with pytest.raises(ValueError, match="needs 'refusal'"):
        Checks.model_validate({"expect": "refuse"})
    with pytest.raises(ValueError, match="at least one check"):
        Checks.model_validate({"checks": []})


@pytest.mark.slow
def test_refusing_a_solvable_problem_counts_as_zero_on_the_leaderboard(tmp_path):
    """An agent that declines everything must not look better than one that tries."""
    import json

    from tests.conftest import QUICK, hpcbench

    sub = tmp_path / "subs" / "shy-agent" / "rosenbrock" / "1"
    sub.mkdir(parents=True)
    (sub / "submission.json").write_text(json.dumps({
        "problem": "rosenbrock", "agent": "shy-agent", "attempt": "1", "refused": True,
        "refusal_reason": "optimisation is out of scope for me"}))
    out = tmp_path / "camp"
    hpcbench("run", "--profile", str(QUICK), "--submissions", str(tmp_path / "subs"), "--problems", "rosenbrock",
             "--out", str(out))
    rep = json.loads(hpcbench("report", str(out), "--format", "json").stdout)
    row = next(r for r in rep["submissions"] if r["agent"] == "shy-agent")
    assert row["refused"] and row["composite"] == 0.0 and row["failed_gate"] == "refused"
    board = {r["agent"]: r for r in rep["leaderboard"]}
    assert board["shy-agent"]["composite_mean"] == 0.0
    assert board["reference"]["composite_mean"] > 90
