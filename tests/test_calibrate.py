"""Judge calibration by negative probing (`hpcbench calibrate`).

The judges here are tests/openai_server.py on 127.0.0.1, a stand-in: no LLM
provider is reachable from the machines these tests run on. It is scripted as
three judges whose right answers are known from the probe labels (which the
stand-in reads from probes.json, as the test's oracle; the judge's prompt never
carries them): a perfect one, a lenient one that rates everything high, and one
that answers at random. Everything from litellm's request down to the judge
cache, scoring and the metrics is the real code path, on a real probe campaign
built and run once per session on this machine's PETSc and MPI."""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import random
import re
import shutil
import threading
from pathlib import Path

import pytest

from hpcbench.resources import data_path
from hpcbench.store.scorings import read_scoring
from hpcbench.validation.calibration.metrics import Judgement, summarise
from hpcbench.validation.calibration.probes import MIN_PER_DIMENSION, load_probes
from tests.conftest import hpcbench
from tests.openai_server import Reply

PROBES = load_probes()
ASPECT = re.compile(r"Aspect: ([A-Z ]+)[.,]")


# ----------------------------------------------------------------------------- the probe set


def test_probe_set_has_enough_labelled_probes_and_no_label_in_any_program():
    assert PROBES.shortfalls() == []
    for d in PROBES.dimensions:
        assert len(PROBES.planted(d)) >= MIN_PER_DIMENSION, d
    assert len(PROBES.controls) >= MIN_PER_DIMENSION
    for p in PROBES.probes:
        folder = (PROBES.submissions_dir / p.agent / p.problem / p.attempt if p.agent == "probe"
                  else data_path("problems") / p.problem / "reference")
        src = (folder / "main.c").read_text()
        meta = json.loads((folder / "submission.json").read_text())
        # What a judge sees must not give the answer away: no label, no defect description.
        assert not ({"lowers", "untouched", "defect"} & set(meta)), p.id
        assert p.defect == "" or p.defect.lower() not in src.lower(), p.id
        for word in ("planted", "probe", "defect", "calibrat"):
            assert word not in src.lower(), (p.id, word)
        # Probes differ from their base: a probe identical to a control measures nothing.
        if not p.clean:
            base = (Path(__file__).resolve().parent.parent / p.base / "main.c").read_text()
            assert src != base, p.id


def test_v2_is_v1_as_released_plus_injected_twins_that_differ_only_by_added_lines():
    v1 = load_probes("v1")
    assert PROBES.version == "v2" and len(PROBES.probes) == len(v1.probes) + len(PROBES.injected)
    for p in v1.probes:  # the released probes, byte for byte
        if p.agent == "probe":
            rel = Path("probe") / p.problem / p.attempt / "main.c"
            assert (PROBES.submissions_dir / rel).read_bytes() == (v1.submissions_dir / rel).read_bytes(), p.id
    by_id = {p.id: p for p in PROBES.probes}
    assert len(PROBES.injected) >= 12 and {d for p in PROBES.injected for d in by_id[p.twin].lowers} >= set(
        PROBES.dimensions) and sum(by_id[p.twin].clean for p in PROBES.injected) >= 4
    for p in PROBES.injected:
        t = by_id[p.twin]
        twin = (PROBES.submissions_dir / "probe" / t.problem / t.attempt / "main.c" if t.agent == "probe"
                else data_path("problems") / t.problem / "reference" / "main.c").read_text().splitlines()
        mine = (PROBES.submissions_dir / "probe" / p.problem / p.attempt / "main.c").read_text().splitlines()
        removed = [d for d in difflib.ndiff(twin, mine) if d.startswith("- ")]
        assert removed == [] and len(mine) > len(twin), (p.id, p.twin, removed[:3])
        assert (p.lowers, p.untouched, p.problem) == (t.lowers, t.untouched, t.problem)


def test_probe_labels_are_validated_with_file_and_field(tmp_path, monkeypatch):
    bad = json.loads((PROBES.folder / "probes.json").read_text())
    bad["probes"][7]["untouched"] = bad["probes"][7]["lowers"]
    (tmp_path / "v1").mkdir()
    (tmp_path / "v1" / "probes.json").write_text(json.dumps({**bad, "version": "v1"}))
    import hpcbench.validation.calibration.probes as probes_mod

    monkeypatch.setattr(probes_mod, "probes_root", lambda: tmp_path)
    with pytest.raises(Exception, match=r"probes.json.*both lowered and untouched"):
        probes_mod.load_probes("v1")
    with pytest.raises(Exception, match=r"no probe set 'v9'"):
        probes_mod.load_probes("v9")


# ----------------------------------------------------------------------------- metrics (pure)


def _judged(scorer) -> list[Judgement]:
    return [Judgement(p.id, d, 0, scorer(p, d)) for p in PROBES.probes for d in PROBES.dimensions]


def test_metrics_follow_the_llm4vv_definitions():
    perfect = summarise(PROBES, _judged(lambda p, d: 0.2 if d in p.lowers else 0.9))
    o = perfect["overall"]
    assert (o["detection_rate"], o["false_alarm_rate"], o["accuracy"], o["bias"], o["leakage_rate"]) == (
        1.0, 0.0, 1.0, 0.0, 0.0)
    strict = summarise(PROBES, _judged(lambda p, d: 0.1))  # flags everything: only false alarms
    assert strict["overall"]["bias"] == -1.0 and strict["overall"]["false_alarm_rate"] == 1.0
    assert strict["overall"]["leakage_rate"] == 1.0
    # One missed readability probe and one false alarm on documentation.
    missed, fa = PROBES.planted("readability")[0].id, PROBES.controls[0].id
    mixed = summarise(PROBES, _judged(lambda p, d: 0.9 if (p.id, d) == (missed, "readability") else
                                      0.2 if (p.id, d) == (fa, "documentation") else
                                      0.2 if d in p.lowers else 0.9))
    r, doc = mixed["dimensions"]["readability"], mixed["dimensions"]["documentation"]
    assert r["detection_rate"] == pytest.approx(1 - 1 / len(PROBES.planted("readability"))) and r["bias"] == 1.0
    assert doc["false_alarm_rate"] == pytest.approx(1 / len(PROBES.controls)) and doc["bias"] == -1.0
    assert mixed["overall"]["bias"] == 0.0  # one of each
    assert mixed["dimensions"]["readability"]["mean_drop"] < perfect["dimensions"]["readability"]["mean_drop"]
    # Unanswered judgements are counted, never scored.
    gaps = summarise(PROBES, [Judgement(p.id, "readability", 0, None) for p in PROBES.probes])
    assert gaps["dimensions"]["readability"]["unanswered"] == len(PROBES.probes) - len(PROBES.injected)
    assert gaps["dimensions"]["readability"]["injection"]["unanswered"] == len(PROBES.injected)
    assert gaps["dimensions"]["readability"]["accuracy"] is None
    assert gaps["dimensions"]["readability"]["low_confidence"]
    # Injected probes are measured against their twins only: an obedient judge keeps its accuracy and
    # shows in the injection figures (a rise of 0.1 on a clean twin is still "unchanged", 0.8 is not).
    obedient = summarise(PROBES, _judged(lambda p, d: 1.0 if p.injected else 0.2 if d in p.lowers else 0.9))
    assert obedient["overall"]["accuracy"] == 1.0 and perfect["overall"]["injection"]["unchanged_rate"] == 1.0
    inj = obedient["overall"]["injection"]
    assert inj["pairs"] == len(PROBES.injected) * len(PROBES.dimensions) and inj["max_raise"] == pytest.approx(0.8)
    raised = sum(len(p.lowers) for p in PROBES.injected)
    assert inj["unchanged_rate"] == pytest.approx(1 - raised / inj["pairs"]) and inj["mean_shift"] > 0


def test_trust_lowers_confidence_below_the_threshold_and_says_so():
    from hpcbench.evaluators.base import EvalResult
    from hpcbench.score import judge_trust as trust

    res = EvalResult(evaluator="readability", stage="quality", category="code", score=0.8, confidence=0.9,
                     rationale="clear", method="llm_judge", prompt_version="readability.v1")
    cal = {"file": "f.json", "probe_set": "v1", "created": "t", "threshold": 0.8,
           "dimensions": {"readability": {"prompt_version": "readability.v1", "accuracy": 0.65}}}
    low = trust.apply_calibration(res, cal)
    assert low.score == 0.8 and low.confidence == pytest.approx(0.9 * 0.5)
    assert low.rationale.startswith("[low-confidence judge: accuracy 0.65 < 0.80 on probe set v1")
    assert low.evidence["calibration"]["confidence_before"] == 0.9
    chance = trust.apply_calibration(res, {**cal, "dimensions": {"readability": {"prompt_version": "readability.v1",
                                                                      "accuracy": 0.4}}})
    assert chance.confidence == 0.0
    ok = trust.apply_calibration(res, {**cal, "threshold": 0.6})
    assert ok.confidence == 0.9 and ok.rationale == "clear" and ok.evidence["calibration"]["low_confidence"] is False
    other = trust.apply_calibration(res.model_copy(update={"prompt_version": "readability.v2"}), cal)
    assert other.confidence == 0.9 and other.evidence["calibration"]["applies"] is False
    assert trust.apply_calibration(res, None) is res


def test_unreadable_calibration_result_is_named(tmp_path):
    from hpcbench.errors import HpcbenchError
    from hpcbench.judge.calibrations import lookup

    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "judge--x.json").write_text("{not json")
    with pytest.raises(HpcbenchError, match=r"judge--x.json: not a calibration result"):
        lookup("openai/judge", tmp_path)
    assert lookup("openai/judge", tmp_path / "none") is None


# ----------------------------------------------------------------------------- scripted judges


class ScriptedJudge:
    """Answers by the rubric named in the prompt and the program in it (matched to the probe
    files, which the stand-in reads as the test's oracle)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.sources: dict[str, object] = {}
        for p in PROBES.probes:
            folder = (PROBES.submissions_dir / p.agent / p.problem / p.attempt if p.agent == "probe"
                      else data_path("problems") / p.problem / "reference")
            # The prompt fences each file with its trailing whitespace cut (judge/prompt.py).
            self.sources[(folder / "main.c").read_text().rstrip()] = p
        self.seen: dict[str, int] = {}
        self.lock = threading.Lock()

    def probe(self, user: str):
        # An injected probe holds its twin's program: the longest match is the one sent.
        hits = sorted(((src, p) for src, p in self.sources.items() if src in user), key=lambda sp: -len(sp[0]))
        assert hits, "a prompt with no probe program"
        return hits[0][1]

    def __call__(self, body: dict) -> Reply:
        user = body["messages"][-1]["content"]
        aspect = ASPECT.search(user).group(1).lower().replace(" ", "_")
        p = self.probe(user)
        if self.kind == "perfect":
            score = 0.2 if aspect in p.lowers else 0.9
        elif self.kind == "obedient":  # perfect, but does what text addressed to it asks
            score = 1.0 if p.injected else 0.2 if aspect in p.lowers else 0.9
        elif self.kind == "lenient":
            score = 0.95
        else:  # random: a new draw each time the same prompt comes back (the repeats)
            key = hashlib.sha256(user.encode()).hexdigest()
            with self.lock:
                n = self.seen[key] = self.seen.get(key, -1) + 1
            score = random.Random(f"{key}-{n}").random()
        return Reply.json({"score": round(score, 3), "confidence": 0.9, "rationale": f"{self.kind} judge"})


@pytest.fixture(scope="session")
def probe_dir(tmp_path_factory) -> Path:
    """The probe campaign, built and run once (real builds and runs through the gates).
    $HPCBENCH_TEST_PROBE_CAMPAIGN may name one built earlier by this code (linked, not copied:
    its job specs hold its own paths): for iterating on the judge side only, never a full run."""
    from hpcbench.validation.calibration.calibrate import probe_campaign

    root = tmp_path_factory.mktemp("calibration")
    if os.environ.get("HPCBENCH_TEST_PROBE_CAMPAIGN"):
        (root / f"campaign-{PROBES.version}").symlink_to(Path(os.environ["HPCBENCH_TEST_PROBE_CAMPAIGN"]).resolve())
    probe_campaign(root / f"campaign-{PROBES.version}", PROBES)
    return root


def calibrate(srv, probe_dir: Path, model: str, *extra: str) -> dict:
    out = hpcbench("calibrate", "--judge", f"openai/{model}", "--judge-base-url", srv.base_url, "--dir",
                   str(probe_dir), "--format", "json", *extra)
    return json.loads(out.stdout)


@pytest.mark.slow
def test_every_probe_compiles_and_runs_through_the_gates(probe_dir):
    from hpcbench.score.scoring import score_campaign
    from hpcbench.store import read_campaign

    scores = score_campaign(read_campaign(probe_dir / f"campaign-{PROBES.version}" / "campaign.h5"))
    by_key = {(s.agent, s.problem, s.attempt): s for s in scores}
    for p in PROBES.probes:
        sc = by_key[p.key]
        gates = {r.evaluator: r.passed for r in sc.results if r.stage == "gate"}
        assert not sc.failed_gate and all(gates.values()), (p.id, p.defect, sc.failed_gate, gates)
    # A deterministic evaluator sees some planted defects too: the probes are what they say.
    eh = {p.id: next(r.score for r in by_key[p.key].results if r.evaluator == "error_handling")
          for p in PROBES.probes}
    unchecked = next(p.id for p in PROBES.probes if "no PETSc call checked" in p.defect)
    assert eh[unchecked] < 0.2 and all(eh[c.id] == 1.0 for c in PROBES.controls)


@pytest.mark.slow
def test_calibrate_three_scripted_judges(probe_dir, openai_server, tmp_path, monkeypatch):
    n_items = len(PROBES.probes) * len(PROBES.dimensions)

    # Perfect: every planted defect found, nothing else flagged.
    openai_server.respond_with(ScriptedJudge("perfect"))
    perfect = calibrate(openai_server, probe_dir, "perfect", "--repeats", "2")
    assert openai_server.count == 2 * n_items and openai_server.errors == []
    for name, m in [*perfect["dimensions"].items(), ("overall", perfect["overall"])]:
        assert (m["detection_rate"], m["false_alarm_rate"], m["accuracy"], m["bias"], m["leakage_rate"],
                m["stability"]) == (1.0, 0.0, 1.0, 0.0, 0.0, 1.0), name
        assert m["mean_drop"] == pytest.approx(0.7)
    assert perfect["invalid_probes"] == {} and perfect["judge_stats"]["http_calls"] == 2 * n_items
    assert perfect["probe_set"]["version"] == "v2" and perfect["prompt_versions"]["readability"] == "readability.v2"
    # Injected probes: scored 0 by rule in the scoring, measured on the judge's own answer, unmoved.
    inj = perfect["overall"]["injection"]
    assert inj["pairs"] == 2 * len(PROBES.injected) * len(PROBES.dimensions) and inj["unchanged_rate"] == 1.0
    assert inj["mean_shift"] == 0.0 and "Injected probes" in hpcbench(
        "calibrate", "--judge", "openai/perfect", "--judge-base-url", openai_server.base_url, "--dir", str(probe_dir),
        "--repeats", "2").stdout
    assert Path(perfect["file"]).is_file()
    # The labels never reach the judge.
    sent = "\n".join(json.dumps(r.body["messages"]) for r in openai_server.requests)
    for p in PROBES.probes:
        assert p.defect == "" or p.defect not in sent
    assert not re.search(r"\bp\d\d\b|\bprobe\b", sent)

    # A re-run with the same judge is answered from the cache.
    openai_server.reset()
    again = calibrate(openai_server, probe_dir, "perfect", "--repeats", "2")
    assert openai_server.count == 0 and again["judge_stats"]["http_calls"] == 0
    assert again["judge_stats"]["cached"] == 2 * n_items
    assert again["dimensions"] == perfect["dimensions"]

    # Obedient: as accurate as the perfect judge on the probes without injection (they are left out of
    # accuracy), but steered by every injection: flagged by the injection figures alone.
    openai_server.reset()
    openai_server.respond_with(ScriptedJudge("obedient"))
    obedient = calibrate(openai_server, probe_dir, "obedient")
    assert obedient["overall"]["accuracy"] == 1.0
    inj = obedient["overall"]["injection"]
    assert inj["unchanged_rate"] < 0.9 and inj["mean_shift"] > 0 and inj["max_raise"] == pytest.approx(0.8)
    dims = {d: m["injection"]["unchanged_rate"] for d, m in obedient["dimensions"].items()}
    assert min(dims.values()) < 1.0, dims

    # Lenient: rates everything high, finds nothing; every mistake a miss (bias +1).
    openai_server.reset()
    openai_server.respond_with(ScriptedJudge("lenient"))
    lenient = calibrate(openai_server, probe_dir, "lenient")
    o = lenient["overall"]
    assert o["detection_rate"] == 0.0 and o["false_alarm_rate"] == 0.0 and o["bias"] == 1.0
    assert o["accuracy"] == pytest.approx(o["controls"] / (o["controls"] + o["planted"]))
    assert all(m["low_confidence"] for m in lenient["dimensions"].values())
    assert lenient["overall"]["stability"] is None  # one repeat: not measured

    # A judge that cannot be reached: an infrastructure error, as `score` treats it, and no
    # calibration stored that a later scoring would read (outside review, 5379f62: exit 0 and a
    # stored calibration of 198 unanswered probes).
    from hpcbench.judge.calibrations import lookup

    down = hpcbench("calibrate", "--judge", "openai/down", "--judge-base-url", "http://127.0.0.1:9/v1", "--dir",
                    str(probe_dir), "--judge-retries", "0", "--judge-timeout", "5", check=False)
    assert down.returncode != 0 and "Traceback" not in down.stderr, down.stderr
    assert "judgements not made" in down.stderr and "no calibration stored" in down.stderr, down.stderr
    assert lookup("openai/down", probe_dir) is None and lookup("openai/lenient", probe_dir) is not None

    # Random: accuracy near chance. Bounds: 2 repeats x 6 dimensions x (planted + controls) judgements,
    # each right with probability ~0.5, so the standard deviation is ~0.045: [0.33, 0.67] is over 3.5 sigma.
    openai_server.reset()
    openai_server.respond_with(ScriptedJudge("random"))
    rnd = calibrate(openai_server, probe_dir, "random", "--repeats", "2")
    o = rnd["overall"]
    assert 0.33 <= o["accuracy"] <= 0.67, o
    assert 0.2 <= o["detection_rate"] <= 0.95 and 0.1 <= o["false_alarm_rate"] <= 0.8, o
    assert o["stability"] < 0.75  # the same verdict twice: about 0.53 for a coin that flags 62.5%
    assert openai_server.errors == []
    # The two repeats are also the judge samples of one more scoring (no new call): its report says
    # how much of each interval is the judge's noise.
    assert perfect["samples_scoring"] and lenient["samples_scoring"] == ""
    sc = read_scoring(probe_dir / f"campaign-{PROBES.version}", rnd["samples_scoring"])
    comps = [r["judge_composites"] for r in sc.rows if r["gates_passed"]]
    assert comps and all(len(c) == 2 for c in comps) and any(c[0] != c[1] for c in comps)
    rep = json.loads(hpcbench("report", str(probe_dir / f"campaign-{PROBES.version}"),
                              "--scoring-id", rnd["samples_scoring"], "--format", "json").stdout)
    assert any(r["uncertainty"]["judge_share"] for r in rep["leaderboard"])

    # Scoring by the random judge lowers its confidence where it is below the threshold, and
    # says so; the perfect judge's is kept.
    camp = tmp_path / "c"
    shutil.copytree(probe_dir / f"campaign-{PROBES.version}", camp)
    monkeypatch.setenv("HPCBENCH_CALIBRATION_DIR", str(probe_dir))
    openai_server.reset()
    out = hpcbench("score", str(camp), "--scoring-id", "by-random", "--judge", "openai/random",
                   "--judge-base-url", openai_server.base_url).stdout
    worst = min(rnd["dimensions"], key=lambda d: rnd["dimensions"][d]["accuracy"])
    acc = rnd["dimensions"][worst]["accuracy"]
    assert acc < 0.75 and "low confidence, confidence lowered" in out and worst in out
    md = hpcbench("report", str(camp)).stdout
    assert "## Judge calibration" in md and "LOW CONFIDENCE" in md and "applied by this scoring" in md
    openai_server.respond_with(ScriptedJudge("perfect"))
    out = hpcbench("score", str(camp), "--scoring-id", "by-perfect", "--judge", "openai/perfect",
                   "--judge-base-url", openai_server.base_url).stdout
    assert "every dimension above it" in out
    rnd_scoring = read_scoring(camp, "by-random", evidence=True)
    g = rnd_scoring.row("reference", "rosenbrock", "1")["evaluators"][worst]
    ev = g["evidence"]
    assert g["rationale"].startswith("[low-confidence judge: accuracy")
    assert ev["calibration"]["low_confidence"] and ev["calibration"]["accuracy"] == acc
    assert ev["calibration"]["confidence_before"] == 0.9
    assert g["confidence"] == pytest.approx(0.9 * max(0.0, (acc - 0.5) / 0.25))
    assert rnd_scoring.config["judge"]["calibration"]["file"] == rnd["file"]
    g = read_scoring(camp, "by-perfect", evidence=True).row("reference", "rosenbrock", "1")["evaluators"][worst]
    assert g["confidence"] == pytest.approx(0.9) and not g["rationale"].startswith("[low")
    assert g["evidence"]["calibration"]["low_confidence"] is False
