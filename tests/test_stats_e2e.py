"""The leaderboard's uncertainty through the real pipeline: three agents on rosenbrock, six
attempts each, every attempt either the bundled reference or the reference stopped after
one Tao iteration (a wrong answer that passes every gate): 6/6, 4/6 and 3/6 right.
`hpcbench run` builds and runs all of them against PETSc, scores and reports; the report
must order the means as the attempts do but, from one problem, give no interval and rank
no agent apart however many attempts (an interval over attempts of one problem held the
truth 38-62% of the time: docs/report.md), give pass@1 and pass@k, and `explain` must draw
every number again ("match").

Judge noise: the same campaign scored with three samples of a judge (the stand-in
OpenAI-compatible server of tests/openai_server.py: no LLM provider is reachable here)
whose answers vary from call to call."""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import threading
from pathlib import Path

import pytest

from hpcbench.store.scorings import read_scoring
from tests.conftest import ROOT, hpcbench, profile_file
from tests.openai_server import Reply

pytestmark = pytest.mark.slow

AGENTS = {"six-of-six": 6, "four-of-six": 4, "three-of-six": 3}


def one_iteration(reference: str) -> str:
    """The reference stopped after one Tao iteration, printing what it has: wrong, not a crash."""
    maxit = "PetscCall(TaoSetMaximumIterations(tao, 10000));"
    check = next(ln for ln in reference.splitlines() if "PetscCheck(reason > 0" in ln)
    wrong = reference.replace(maxit, "PetscCall(TaoSetMaximumIterations(tao, 1));").replace(check + "\n", "")
    assert maxit not in wrong and check not in wrong
    return wrong


def write_tree(root: Path) -> Path:
    ref = (ROOT / "problems" / "rosenbrock" / "reference" / "main.c").read_text()
    wrong = one_iteration(ref)
    for agent, right in AGENTS.items():
        for i in range(1, 7):
            d = root / agent / "rosenbrock" / str(i)
            d.mkdir(parents=True)
            (d / "main.c").write_text(ref if i <= right else wrong)
            (d / "submission.json").write_text(json.dumps({
                "problem": "rosenbrock", "agent": agent, "model": "hand-written", "attempt": str(i),
                "entry": "main.c", "files": ["main.c"], "ranks": [], "args": [], "refused": False,
                "generation": {}}))
    return root


@pytest.fixture(scope="module")
def campaign(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("stats")
    out = tmp / "c"
    # one case each (the cheapest), no held-out draw: an attempt is right or wrong everywhere alike
    one_case = profile_file("one-case", cases="cheapest", held_out=False)
    hpcbench("run", "--profile", str(one_case), "--submissions", str(write_tree(tmp / "tree")), "--problems",
             "rosenbrock", "--out", str(out), "--bootstrap-seed", "11")
    return out


@pytest.fixture(scope="module")
def report(campaign) -> dict:
    return json.loads(hpcbench("report", str(campaign), "--format", "json").stdout)


def test_each_attempt_is_right_or_wrong_as_written(report):
    for s in report["submissions"]:
        if s["agent"] in AGENTS:
            right = int(s["attempt"]) <= AGENTS[s["agent"]]
            assert s["gates_passed"] and s["stop_reason"] == ("complete" if right else "wrong answer"), s


def test_intervals_contain_the_means_and_the_order_says_no_more_than_the_data(report):
    lb = {r["agent"]: r for r in report["leaderboard"]}
    for agent, right in AGENTS.items():
        r = lb[agent]
        assert r["uncertainty"]["scope"] == "too few", r  # one problem: no interval, however many attempts
        assert r["composite_ci_low"] is None and r["rank"] == "1-4", r
        assert r["pass_at_1"] == pytest.approx(right / 6)
    assert lb["six-of-six"]["composite_mean"] > lb["four-of-six"]["composite_mean"] > lb["three-of-six"][
        "composite_mean"]
    pairs = report["uncertainty"]["pairs"]
    assert len(pairs) == 6 and all(p["established"] == 0 and p["established_alone"] == 0 for p in pairs)
    assert report["uncertainty"]["problems"]["common"] == ["rosenbrock"]
    ref = lb["reference"]  # one attempt on one problem
    assert ref["uncertainty"]["scope"] == "too few" and ref["composite_ci_low"] is None and ref["rank"] == "1-4"
    assert report["uncertainty"]["settings"]["seed"] == 11 and report["uncertainty"]["stored"]


def brute_pass_at_k(flags: list[bool], k: int) -> float:
    subsets = list(itertools.combinations(flags, k))
    return sum(any(s) for s in subsets) / len(subsets)


def test_pass_at_k_per_problem_matches_enumeration(report):
    rows = {r["agent"]: r for r in report["uncertainty"]["pass_at_k"]}
    for agent, right in AGENTS.items():
        flags = [i < right for i in range(6)]
        assert rows[agent]["c"] == right and rows[agent]["values"] == pytest.approx(
            [brute_pass_at_k(flags, k) for k in range(1, 7)])


def test_markdown_and_html_show_intervals_ranks_and_pass_at_1(campaign, report):
    md = (campaign / "report" / "report.md").read_text()
    head = next(ln for ln in md.splitlines() if ln.startswith("| rank | agent |"))
    assert "95% interval" in head and "pass@1" in head
    # the leaderboard's row: agent names are code spans in report.md (agent text is inert there)
    three = next(ln for ln in md.splitlines() if ln.startswith("| ") and "| `three-of-six` |" in ln)
    lb = {r["agent"]: r for r in report["leaderboard"]}["three-of-six"]
    assert "| too few to say |" in three and "| 0.50 |" in three and lb["composite_ci_low"] is None
    assert "## How sure" in md and "### Paired differences" in md and "### pass@k" in md
    assert "### Problems measured" in md and "Holm" in md
    assert re.search(r"\| `six-of-six` \| `three-of-six` \| [\d.]+ \| too few to say \| 1 "
                     r"\| not established \|", md)
    assert "too few to say" in md and "### How many attempts" in md
    html = (campaign / "report" / "report.html").read_text()
    assert "<img id='intervals'" in html and "id='pairs'" in html and "id='pass-at-k'" in html
    assert "data-source='/stats/" in html


def test_explain_draws_every_interval_rank_and_pass_at_k_again(campaign, report):
    from hpcbench.report.explain import explain  # what the command runs, in this process: many paths

    sid, h5 = report["scoring_id"], campaign / "campaign.h5"
    paths = [f"/stats/{sid}/agents/{a}" for a in AGENTS] + [f"/stats/{sid}/ranks/{a}" for a in AGENTS]
    paths += [f"/stats/{sid}/agents/three-of-six/pass", f"/stats/{sid}/agents/four-of-six/correctness",
              f"/stats/{sid}/pairs/six-of-six/three-of-six", f"/stats/{sid}/pass_at_k/four-of-six/rosenbrock",
              f"/stats/{sid}/pass_at_k/four-of-six", f"/stats/{sid}/power"]
    paths += [r["uncertainty"][k] for r in report["leaderboard"] for k in ("interval_source", "rank_source",
                                                                            "pass_source")]
    for p in paths:
        out = explain(h5, p)
        assert "derived again, stored: match" in out and "MISMATCH" not in out, (p, out)
    lb = {r["agent"]: r for r in report["leaderboard"]}["three-of-six"]
    out = hpcbench("explain", str(campaign), f"/stats/{sid}/agents/three-of-six").stdout
    assert "too few to say" in out and f"estimate {lb['composite_mean']:.4f}" in out
    assert "derived again, stored: match" in out
    est = explain(h5, f"/stats/{sid}/agents/three-of-six@estimate")
    assert est.startswith(f"/stats/{sid}/agents/three-of-six@estimate = {lb['composite_mean']}")
    every = explain(h5, f"/stats/{sid}/agents/*")
    assert every.count("== /stats/") == 4 and every.count("stored: match") == 4  # the reference too: "too few"


def test_a_tampered_scoring_is_a_mismatch(campaign, report, tmp_path):
    """explain compares against what the scoring stored: a changed stored interval is caught."""
    import shutil

    import h5py
    import numpy as np

    camp = tmp_path / "c"
    shutil.copytree(campaign, camp)
    sid = report["scoring_id"]
    path = camp / "scores" / f"{sid}.h5"
    with h5py.File(path, "r+") as f:
        doc = json.loads(f["stats"][()].tobytes().rstrip(b"\0"))
        doc["agents"]["three-of-six"]["composite"]["estimate"] += 5.0
        del f["stats"]
        f.create_dataset("stats", data=np.frombuffer(json.dumps(doc).encode(), dtype="u1"))
    # the scoring's checksum finds the edit first: explain refuses the file
    refused = hpcbench("explain", str(camp), f"/stats/{sid}/agents/three-of-six", check=False)
    assert refused.returncode == 2 and "damaged" in refused.stderr, refused.stderr
    # a forger who writes the checksum again is still caught: explain derives the interval again
    from hpcbench.store.integrity import seal

    seal(path)
    out = hpcbench("explain", str(camp), f"/stats/{sid}/agents/three-of-six").stdout
    assert "MISMATCH: estimate derived" in out


def test_plan_power_says_one_problem_establishes_nothing(campaign):
    bad = hpcbench("plan-power", str(campaign), "--difference", "10", check=False)
    assert bad.returncode == 2 and "nothing is established from fewer than 3" in bad.stderr, bad.stderr
    assert "Traceback" not in bad.stderr


def test_judge_samples_split_the_interval_into_judge_and_attempts(campaign, tmp_path, openai_server):
    import shutil

    camp = tmp_path / "c"
    shutil.copytree(campaign, camp)
    lock = threading.Lock()
    calls = {"n": 0}

    def varying(body: dict) -> Reply:  # a judge whose answer moves from call to call
        with lock:
            calls["n"] += 1
            k = calls["n"]
        # not periodic in the call count: with k % 3, a sample of a multiple of 3 judgements gave
        # every submission the same answers in every sample (108 here: identical composites)
        pick = int(hashlib.sha256(str(k).encode()).hexdigest(), 16) % 3
        return Reply.json({"score": [0.3, 0.6, 0.9][pick], "confidence": 1.0, "rationale": f"call {k}"})

    openai_server.respond_with(varying)
    url = openai_server.base_url
    hpcbench("score", str(camp), "--scoring-id", "one", "--judge", "openai/judge-a", "--judge-base-url", url)
    asked_once = openai_server.count
    hpcbench("score", str(camp), "--scoring-id", "three", "--judge", "openai/judge-a", "--judge-base-url", url,
             "--judge-samples", "3")
    assert openai_server.count == 3 * asked_once  # sample 0 came from the cache, samples 1 and 2 were asked
    sc = read_scoring(camp, "three", evidence=True)
    row = sc.row("six-of-six", "rosenbrock", "1")
    ev = row["evaluators"]["readability"]
    assert len(ev["evidence"]["samples"]) == 3 and "mean of 3 of 3 judge samples" in ev["rationale"]
    assert len(row["judge_composites"]) == 3 and len(set(row["judge_composites"])) > 1
    rep = json.loads(hpcbench("report", str(camp), "--format", "json", "--scoring-id", "three").stdout)
    shares = {r["agent"]: r["uncertainty"]["judge_share"] for r in rep["leaderboard"]}
    assert 0 < shares["six-of-six"] <= 1.0  # its attempts agree: what varies is the judge
    assert shares["three-of-six"] < shares["six-of-six"]  # right and wrong attempts vary more than the judge
    md = hpcbench("report", str(camp), "--scoring-id", "three").stdout
    assert "### Judge noise" in md
    out = hpcbench("explain", str(camp), "/stats/three/agents/six-of-six").stdout
    assert "judge share of the interval's variance" in out and "derived again, stored: match" in out
    cached = [json.loads(ln) for ln in (camp / "judge_cache.jsonl").read_text().splitlines()]
    samples = [c["entry"].get("sample", 0) for c in cached]  # each sample cached under its own key
    assert len({c["key"] for c in cached}) == len(cached) == 3 * asked_once
    assert {k: samples.count(k) for k in set(samples)} == {0: asked_once, 1: asked_once, 2: asked_once}
    bad = hpcbench("score", str(camp), "--judge-samples", "2", check=False)
    assert bad.returncode == 2 and "--judge-samples needs --judge" in bad.stderr
