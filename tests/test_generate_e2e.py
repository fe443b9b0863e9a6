"""End to end through the CLI: `generate` from a test A2A agent (the purple format
on protocol 0.3), then `submit`, `collect`, `score` and `report`, on real PETSc
and MPI. A good program, a failed generation and a refusal on the refusal set
all reach the report with their tokens, cost, reasons and refusal score."""

import json
import threading
from collections import Counter

import pytest

from hpcbench.resources import data_path
from hpcbench.store import tables
from tests.a2a_servers import PurpleServer, purple_message, purple_success
from tests.conftest import QUICK, hpcbench

pytestmark = [pytest.mark.slow, pytest.mark.petsc]


def _script():
    ref = (data_path("problems") / "vec-scatter" / "reference" / "main.c").read_text()
    seen: Counter = Counter()
    lock = threading.Lock()

    def answer(params):
        from a2a.compat.v0_3 import types as t

        parts = params["message"]["parts"]
        pid = next(p["data"]["hpcbench"]["problem"]["id"] for p in parts if p["kind"] == "data")
        with lock:
            seen[pid] += 1
            n = seen[pid]
        usage = t.Part(root=t.DataPart(data={"schema_version": 1, "input_tokens": 2000 + n,
                                             "output_tokens": 900, "cost_usd": 0.02}))
        if pid == "refuse-vec-ownership":
            return purple_message([t.Part(root=t.DataPart(data={
                "refused": True, "refusal_reason": "impossible: 8 ranks owning 2 entries each need 16, not 5"}))])
        if n == 1:  # first attempt: the purple agent's success, raw source in the file part
            msg = purple_success({"main.c": ref}, 3, "")
            msg["parts"].insert(1, usage.model_dump(mode="json", by_alias=True, exclude_none=True))
            return msg
        return purple_message([t.Part(root=t.TextPart(text='{"files": [{"name": "main.c", "content": "#incl')),
                               usage])

    return answer


def test_generate_submit_collect_score_report_from_an_a2a_agent(tmp_path):
    subs, camp = tmp_path / "subs", tmp_path / "camp"
    problems = "vec-scatter,refuse-vec-ownership"
    with PurpleServer(_script()) as srv:
        out = hpcbench("generate", "--agent", f"a2a:{srv.url}", "--problems", problems, "--attempts", "2",
                       "--out", str(subs), "--timeout", "60").stdout
        assert "2 generated, 2 refused, 0 failed" not in out  # one attempt is a failed generation
        assert "failed generations: malformed_answer: 1" in out, out
        again = hpcbench("generate", "--agent", f"a2a:{srv.url}", "--problems", problems, "--attempts", "2",
                         "--out", str(subs)).stdout
        assert "4 already there" in again
    hpcbench("submit", "--profile", str(QUICK), "--submissions", str(subs), "--problems", problems, "--out", str(camp))
    hpcbench("collect", str(camp))
    hpcbench("score", str(camp))
    rows = json.loads(hpcbench("report", str(camp), "--format", "json").stdout)["submissions"]
    by = {(r["agent"], r["problem"], r["attempt"]): r for r in rows}

    # The two attempts run concurrently: whichever asked first got the good answer.
    pair = [by[("purple_agent", "vec-scatter", a)] for a in ("1", "2")]
    good, failed = sorted(pair, key=lambda r: r["status"] == "generation failed")
    assert good["gates_passed"], good["why"]
    assert good["evaluators"]["numerical_accuracy"]["score"] == 1.0
    assert good["generation"]["prompt_tokens"] == 2001 and good["generation"]["completion_tokens"] == 900
    assert good["generation"]["cost_usd"] == pytest.approx(0.02)

    assert failed["failed_gate"] == "generation" and failed["composite"] == 0.0
    assert failed["status"] == "generation failed" and failed["generation"]["prompt_tokens"] == 2002
    subs = tables(camp / "campaign.h5")["submissions"]  # the reason and taxonomy key the report's taxonomy reads
    attrs = subs[(subs.agent == "purple_agent") & (subs.problem == "vec-scatter")
                 & (subs.attempt == failed["attempt"])].iloc[0]
    assert attrs["generation_error_kind"] == "malformed_answer" and "not JSON" in attrs["reason"]
    assert failed["stage"] == "not generated" and failed["stop_reason"] == "generation failed: malformed_answer"
    reasons = json.loads(hpcbench("report", str(camp), "--format", "json").stdout)["taxonomy"]["stop_reasons"]
    assert reasons["purple_agent"]["generation failed: malformed_answer"] == 1

    for key in [("purple_agent", "refuse-vec-ownership", "1"), ("reference", "refuse-vec-ownership", "1")]:
        r = by[key]
        assert r["refused"] and r["refusal_set"] and r["evaluators"]["refusal"]["score"] == 1.0, r
    assert by[("reference", "vec-scatter", "1")]["gates_passed"]
    md = hpcbench("report", str(camp)).stdout
    assert "purple_agent" in md


def test_run_takes_a_generating_agent_directly(tmp_path):
    """`run --agent a2a:URL` generates into <out>/generated and goes on (here the
    refusal set only: nothing to build, so it is quick)."""
    camp = tmp_path / "camp"
    with PurpleServer(_script()) as srv:
        out = hpcbench("run", "--agent", f"a2a:{srv.url}", "--problems", "refuse-vec-ownership",
                       "--out", str(camp)).stdout
    assert (camp / "generated/purple_agent/refuse-vec-ownership/1/submission.json").is_file()
    assert "purple_agent" in out
    rows = json.loads(hpcbench("report", str(camp), "--format", "json").stdout)["submissions"]
    mine = [r for r in rows if r["agent"] == "purple_agent"]
    assert len(mine) == 1 and mine[0]["refused"] and mine[0]["evaluators"]["refusal"]["score"] == 1.0
