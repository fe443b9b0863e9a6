"""`hpcbench compare` on a real campaign, the data exports (JSON Lines, Parquet) and the
scorings' DataFrame loader. The judge is tests/openai_server.py on 127.0.0.1, a stand-in:
no LLM provider is reachable from these machines."""

import json
import shutil

import pandas as pd
import pytest

from hpcbench.report.compare import compare
from hpcbench.store.scorings import frame, read_scoring
from tests.conftest import hpcbench
from tests.openai_server import Reply

pytestmark = [pytest.mark.slow, pytest.mark.petsc]


@pytest.fixture
def camp(sample_campaign, tmp_path):
    """A copy: scorings added here must not change what other tests read as "the latest"."""
    dst = tmp_path / "c"
    shutil.copytree(sample_campaign, dst, ignore=shutil.ignore_patterns(".store.lock"))
    return dst


def test_two_scorings_with_and_without_a_judge_list_every_changed_cell(camp, openai_server):
    hpcbench("score", str(camp), "--scoring-id", "plain")
    openai_server.default = Reply.json({"score": 0.6, "confidence": 0.9, "rationale": "stand-in judge"})
    hpcbench("score", str(camp), "--scoring-id", "judged", "--judge", "openai/stand-in",
             "--judge-base-url", openai_server.base_url)
    res = json.loads(hpcbench("compare", str(camp), "--scoring", "plain", "--against", "judged",
                              "--format", "json").stdout)
    plain, judged = read_scoring(camp, "plain"), read_scoring(camp, "judged")
    expect = set()
    for a in plain.rows:
        b = judged.row(a["agent"], a["problem"], a["attempt"])
        if a["refusal_set"]:
            continue
        if a["composite"] != b["composite"] or any(a["evaluators"][n]["score"] != b["evaluators"][n]["score"]
                                                   for n in a["evaluators"]):
            expect.add((a["agent"], a["problem"], a["attempt"]))
    changed = {tuple(c["key"]) for c in res["cells"] if c["change"] == "changed"}
    assert expect and changed == expect
    assert res["counts"]["changed"] == len(expect) and res["counts"]["only_a"] == res["counts"]["only_b"] == 0
    moved = next(c for c in res["cells"] if c["change"] == "changed")["evaluators_moved"]
    assert "readability" in moved and moved["readability"] == [None, 0.6]  # unscored -> judged
    md = hpcbench("compare", str(camp), "--scoring", "plain", "--against", "judged").stdout
    assert md.count("\n| ") - 1 == len(expect)  # one table line per changed cell (header excluded)


def test_two_agents_problem_by_problem(camp):
    res = compare(camp, None, None, None, agent="legacy-coder", against_agent="reference")
    shared = {c["key"][0] for c in res["cells"] if c["change"] != "only in reference"}
    assert shared == {"robertson", "rosenbrock"}
    robertson = next(c for c in res["cells"] if c["key"] == ["robertson"])
    assert robertson["delta"] > 0 and "numerical_accuracy" in robertson["evaluators_moved"]
    assert ["robertson"] in res["new_passes"]  # the reference passes its checks, legacy-coder's attempt does not


def test_compare_refuses_what_it_cannot_compare(camp):
    p = hpcbench("compare", str(camp), "--agent", "nobody", "--against-agent", "reference", check=False)
    assert p.returncode == 2 and "agent 'nobody' has no scored submission" in p.stderr


def test_exports_and_the_scorings_frame(camp, tmp_path):
    rows = [json.loads(x) for x in hpcbench("report", str(camp), "--format", "jsonl").stdout.splitlines()]
    out = tmp_path / "s.parquet"
    hpcbench("report", str(camp), "--format", "parquet", "--out", str(out))
    df = pd.read_parquet(out)
    assert len(df) == len(rows) and df["attempt"].dtype == "string"
    assert set(df["agent"]) == {r["agent"] for r in rows}
    ref = df[(df.agent == "reference") & (df.problem == "rosenbrock")].iloc[0]
    assert ref["composite"] == pytest.approx(next(r["composite"] for r in rows
                                                  if (r["agent"], r["problem"]) == ("reference", "rosenbrock")))
    ev = frame(camp)
    assert {"agent", "attempt", "evaluator", "score", "rationale", "source"} <= set(ev.columns)
    assert ev["attempt"].dtype == "string" and ev.attrs["scoring"] == read_scoring(camp).sid
    assert len(frame(camp, level="submissions")) == len(rows)
