"""Bad and dishonest input (issue 9): each gives a clear error naming file, field and
reason, and the rest of the campaign goes on; staged sources cannot change unnoticed;
a problem without a usable reference run is not scored."""

import hashlib
import json
import os
import stat
import threading
from pathlib import Path

import pytest

from hpcbench import store
from hpcbench.agents import reserved_agent_names
from hpcbench.errors import ConfigError
from hpcbench.jobs.records import BuildResult, JobResult, RunResult
from hpcbench.plan import staging
from hpcbench.plan.campaign import Campaign, PlanRequest, create_campaign
from hpcbench.problem import load_problem, load_problems
from hpcbench.score.reference_status import NOT_SCORED, reference_problem
from hpcbench.score.scoring import score_campaign
from hpcbench.site import load_site
from hpcbench.store import StoredCampaign, StoredSubmission
from hpcbench.submission import Submission, load_submission, load_tree, reference_submission
from tests.conftest import QUICK, hpcbench

PROBLEMS = {"vec-scatter", "robertson"}
GOOD_C = b"#include <petscsys.h>\nint main(int argc, char **argv)\n{\n  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));\n  PetscCall(PetscFinalize());\n  return 0;\n}\n"  # noqa: E501


def _attempt(root: Path, agent: str = "me", problem: str = "vec-scatter", attempt: str = "1",
             files: dict[str, bytes] | None = None) -> Path:
    d = root / agent / problem / attempt
    d.mkdir(parents=True)
    files = files if files is not None else {"main.c": GOOD_C}
    for name, data in files.items():
        (d / name).parent.mkdir(parents=True, exist_ok=True)
        (d / name).write_bytes(data)
    (d / "submission.json").write_text(json.dumps({"entry": "main.c", "files": list(files)}))
    return d


def _bounded(fn, timeout_s: float = 10.0):
    """Call fn in a thread; fail (instead of hanging the suite) if it does not return."""
    out: list = []
    t = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    t.start()
    t.join(timeout_s)
    assert not t.is_alive(), f"still running after {timeout_s} s (hangs or reads without bound)"
    return out[0]


# ----------------------------------------------------------------------------- submission trees


def test_a_non_utf8_folder_name_is_rejected_by_name_and_the_valid_submission_is_still_planned(tmp_path):
    """Before: campaign.json could not be written (surrogates in the rejection's path) and
    the whole plan died at save_manifest."""
    tree = tmp_path / "tree"
    _attempt(tree, "good")
    bad = _attempt(tree, "bad")
    os.rename(bad, os.fsdecode(bytes(bad.parent) + b"/caf\xe9"))  # attempt folder, not UTF-8
    os.rename(tree / "bad", os.fsdecode(bytes(tree) + b"/ag\xffent"))  # agent folder too
    ok, rejected = load_tree(tree, PROBLEMS)
    assert [s.meta.agent for s in ok] == ["good"]
    assert any("ag\\xffent" in str(r) for r in rejected), [str(r) for r in rejected]
    site = load_site("local")
    campaign, plan = create_campaign(tmp_path / "c", site,
                                     PlanRequest({"vec-scatter": load_problems()["vec-scatter"]}, ok, rejected))
    manifest = json.loads(campaign.manifest_path.read_text())
    assert [j.agent for j in plan.jobs] == ["good"]
    assert any("ag\\xffent" in r["path"] and "agent folder name" in r["reason"] for r in manifest["rejected"])


def test_a_non_utf8_attempt_folder_names_the_field(tmp_path):
    d = _attempt(tmp_path, "me", attempt="x")
    odd = os.fsdecode(bytes(d.parent) + b"/\xe9")
    os.rename(d, odd)
    ok, rejected = load_tree(tmp_path, PROBLEMS)
    assert not ok and len(rejected) == 1
    r = rejected[0]
    assert r.field == "attempt" and "\\xe9" in str(r) and "submission.json" in str(r)
    json.dumps(r.as_dict())  # serialisable: this is what killed save_manifest


def test_submission_json_as_a_fifo_is_rejected_without_hanging(tmp_path):
    """Before: the driver blocked for ever opening the FIFO."""
    d = tmp_path / "me" / "vec-scatter" / "1"
    d.mkdir(parents=True)
    (d / "main.c").write_bytes(GOOD_C)
    os.mkfifo(d / "submission.json")
    res = _bounded(lambda: load_submission(d, "me", "vec-scatter", PROBLEMS, "1"))
    assert not hasattr(res, "meta")
    assert res.path == d / "submission.json" and "not a regular file" in res.reason


def test_submission_json_linked_to_dev_zero_is_rejected_without_reading_it(tmp_path):
    """Before: read until MemoryError."""
    d = tmp_path / "me" / "vec-scatter" / "1"
    d.mkdir(parents=True)
    (d / "main.c").write_bytes(GOOD_C)
    (d / "submission.json").symlink_to("/dev/zero")
    res = _bounded(lambda: load_submission(d, "me", "vec-scatter", PROBLEMS, "1"))
    assert res.path == d / "submission.json" and "symbolic link" in res.reason


@pytest.mark.parametrize("extra,field,words", [
    ({"args": ["\udcff"]}, None, "lone surrogate"),
    ({"model": "gpt\udc80"}, None, "lone surrogate"),
    ({"args": ["-n\u0000"]}, "args", "NUL"),
    ({"ranks": [0]}, "ranks.0", "greater than or equal to 1"),
    ({"generation": {"cost_usd": -1}}, "generation.cost_usd", "greater than or equal to 0"),
    # provider facts are typed (generation.details), also where an older tree wrote them beside the costs
    ({"generation": {"finish_reason": 3}}, "generation.details.finish_reason", "valid string"),
    ({"generation": {"details": {"rounds": [{"round": 1, "ok": "maybe", "build_ok": True}]}}},
     "generation.details.rounds.0.ok", "valid boolean"),
])
def test_submission_json_text_that_would_stop_the_plan_is_rejected(tmp_path, extra, field, words):
    """Before: a lone-surrogate escape loaded fine and then killed the whole plan when the
    staged submission.json was serialised."""
    d = _attempt(tmp_path)
    meta = json.loads((d / "submission.json").read_text())
    (d / "submission.json").write_text(json.dumps({**meta, **extra}))  # json.dumps keeps \udcff escaped
    res = load_submission(d, "me", "vec-scatter", PROBLEMS, "1")
    assert not hasattr(res, "meta") and res.field == field and words in res.reason, res
    json.dumps(res.as_dict())


def test_generation_facts_written_beside_the_costs_load_into_their_typed_fields(tmp_path):
    """submission.json files written before `generation.details` (litellm, a2a and repair
    agents put their facts beside the costs, untyped) load with every fact kept, typed."""
    d = _attempt(tmp_path)
    meta = json.loads((d / "submission.json").read_text())
    old = {"prompt_tokens": 10, "finish_reason": "stop", "prompt_version": "v3", "protocol": "0.3.0",
           "wire_notes": ["main.c: raw text"], "inner_agent": "litellm:m",
           "rounds": [{"round": 1, "build_ok": False, "runs": [], "ok": False},
                      {"round": 2, "build_ok": True, "runs": [{"case": "default", "ranks": 1, "exit_code": 0,
                                                              "stopped_reason": ""}], "ok": True}],
           "a_plugins_own": {"seed": 7}}
    (d / "submission.json").write_text(json.dumps({**meta, "generation": old}))
    g = load_submission(d, "me", "vec-scatter", PROBLEMS, "1").meta.generation
    assert g.prompt_tokens == 10 and g.details.finish_reason == "stop" and g.details.protocol == "0.3.0"
    assert [r.ok for r in g.details.rounds] == [False, True] and g.details.rounds[1].runs[0].exit_code == 0
    assert g.details.other == {"a_plugins_own": {"seed": 7}} and g.details.inner_agent == "litellm:m"
    again = type(g).model_validate_json(g.model_dump_json())
    assert again == g and "finish_reason" not in json.loads(g.model_dump_json())  # written under details


def test_a_source_that_is_a_device_or_too_large_is_rejected(tmp_path):
    d = _attempt(tmp_path, files={"main.c": GOOD_C, "big.h": b"x" * ((1 << 20) + 1)})
    res = load_submission(d, "me", "vec-scatter", PROBLEMS, "1")
    assert res.field == "files" and "larger than" in res.reason


def test_a_symlinked_folder_inside_a_submission_cannot_smuggle_the_hidden_reference(tmp_path):
    """files: ["ref/main.c"] with ref -> problems/vec-scatter/reference: before, only the
    last path part was checked, and the reference was built as the agent's own program."""
    ref = load_problems()["vec-scatter"].reference_dir
    d = tmp_path / "me" / "vec-scatter" / "1"
    d.mkdir(parents=True)
    (d / "ref").symlink_to(ref)
    (d / "submission.json").write_text(json.dumps({"entry": "ref/main.c", "files": ["ref/main.c"]}))
    res = load_submission(d, "me", "vec-scatter", PROBLEMS, "1")
    assert res.field == "files" and "'ref' is a symbolic link" in res.reason


def test_a_symlinked_attempt_or_agent_folder_is_rejected_not_followed(tmp_path):
    ref = load_problems()["vec-scatter"].reference_dir
    (tmp_path / "me" / "vec-scatter").mkdir(parents=True)
    (tmp_path / "me" / "vec-scatter" / "1").symlink_to(ref)  # the reference, scored as "me"
    (tmp_path / "other").symlink_to(tmp_path / "me")
    ok, rejected = load_tree(tmp_path, PROBLEMS)
    assert ok == []
    assert sorted(Path(r.path).name for r in rejected) == ["1", "other"]
    assert all("symbolic link" in r.reason for r in rejected)


@pytest.mark.parametrize("agent", ["reference", "leaky-coder", "samples"])
def test_reserved_agent_names_are_refused_for_user_submissions(tmp_path, agent):
    """Before: a tree with an agent `reference` silently replaced the bundled references."""
    assert {"reference", "leaky-coder", "sloppy-coder"} <= reserved_agent_names()
    _attempt(tmp_path, agent)
    _attempt(tmp_path, "me")
    ok, rejected = load_tree(tmp_path, PROBLEMS, reserved_agent_names())
    assert [s.meta.agent for s in ok] == ["me"]
    assert len(rejected) == 1 and "reserved agent name" in rejected[0].reason and agent in str(rejected[0])


def test_a_reserved_name_in_submission_json_is_refused_too(tmp_path):
    d = _attempt(tmp_path, "me")
    (d / "submission.json").write_text(json.dumps({"entry": "main.c", "files": ["main.c"], "agent": "reference"}))
    res = load_submission(d, None, "vec-scatter", PROBLEMS, "1", reserved_agent_names())
    assert res.field == "agent" and "reserved" in res.reason


def test_the_cli_refuses_a_user_reference_and_keeps_the_bundled_one(tmp_path):
    """`--submissions` with a `reference` agent: rejected with the reason; the plan still
    holds the bundled reference, byte for byte."""
    tree = tmp_path / "tree"
    _attempt(tree, "reference", files={"main.c": b"int main(void){return 0;}\n"})
    out = tmp_path / "c"
    proc = hpcbench("submit", "--submissions", str(tree), "--problems", "vec-scatter", "--out", str(out),
                    "--dry-run", check=False)
    assert "reserved agent name" in proc.stderr, proc.stderr
    from hpcbench.pipeline import plan_campaign
    from hpcbench.plan.options import RunOptions

    planned = plan_campaign(out, load_site("local"), RunOptions(submissions=str(tree), problems="vec-scatter"))
    campaign, plan = planned.campaign, planned.plan
    assert [j.agent for j in plan.jobs] == ["reference"]
    bundled = (load_problems()["vec-scatter"].reference_dir / "main.c").read_bytes()
    assert (campaign.submissions_dir / "reference" / "vec-scatter" / "1" / "main.c").read_bytes() == bundled


@pytest.mark.petsc
def test_run_with_submissions_runs_the_users_tree_without_the_bundled_samples(tmp_path):
    """`run --submissions DIR` once added leaky-coder, sloppy-coder ... to a leaderboard of the
    user's own agents. Now: the user's agents and the reference; the samples only with
    `--agent samples` (or `run` with no arguments)."""
    from hpcbench.agents.dir_agent import samples_root

    tree = tmp_path / "tree"
    reference = load_problems()["vec-scatter"].reference_dir
    _attempt(tree, "me", files={"main.c": (reference / "main.c").read_bytes()})
    out = tmp_path / "c"
    hpcbench("run", "--profile", str(QUICK), "--submissions", str(tree), "--problems", "vec-scatter", "--out", str(out))
    rows = json.loads(hpcbench("report", str(out), "--format", "json").stdout)["submissions"]
    assert {r["agent"] for r in rows} == {"me", "reference"}
    assert {s.agent for s in Campaign(out).specs()} == {"me", "reference"}
    # asked for, the samples come along (planned only: a dry run builds nothing)
    asked = hpcbench("submit", "--agent", "samples", "--submissions", str(tree), "--problems", "vec-scatter",
                     "--out", str(tmp_path / "d"), "--dry-run")
    samples = {p.name for p in samples_root().iterdir() if (p / "vec-scatter").is_dir()}
    assert samples and {s.agent for s in Campaign(tmp_path / "d").specs()} == {"me", "reference", *samples}, \
        asked.stderr


# ----------------------------------------------------------------------------- staging


def _campaign_with(tmp_path, files=None) -> Campaign:
    tree = tmp_path / "tree"
    _attempt(tree, "me", files=files)
    ok, bad = load_tree(tree, PROBLEMS)
    assert ok and not bad
    ok.append(reference_submission(load_problems()["vec-scatter"].folder, "vec-scatter"))
    campaign, _ = create_campaign(tmp_path / "c", load_site("local"),
                                  PlanRequest({"vec-scatter": load_problems()["vec-scatter"]}, ok, bad))
    return campaign


def test_staging_keeps_exact_bytes_read_only_with_their_sha256(tmp_path):
    src = {"main.c": GOOD_C, "inc/util.h": b"/* helper */\n"}
    campaign = _campaign_with(tmp_path, src)
    staged = campaign.submissions_dir / "me" / "vec-scatter" / "1"
    manifest = json.loads((staged / staging.MANIFEST).read_text())
    for name, data in src.items():
        assert (staged / name).read_bytes() == data
        assert manifest["sha256"][name] == hashlib.sha256(data).hexdigest()
        assert not (staged / name).stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    assert not staged.stat().st_mode & stat.S_IWUSR
    assert staging.verify(staged) == []
    assert json.loads(campaign.manifest_path.read_text())["staging"] == staging.SCHEMA


def test_a_source_changed_after_staging_fails_that_submission_at_collect(tmp_path):
    """A job that overwrote its own staged source: campaign.h5 says so and the submission
    fails its first gate, instead of being scored on sources the agent never sent."""
    campaign = _campaign_with(tmp_path)
    staged = campaign.submissions_dir / "me" / "vec-scatter" / "1"
    rec = JobResult(job_id="me__vec-scatter__1", agent="me", problem="vec-scatter", attempt="1",
                    build=BuildResult(command="make", exit_code=0, wall_s=1.0))
    campaign.record_path(rec.job_id).write_text(rec.model_dump_json())
    os.chmod(staged / "main.c", 0o644)
    (staged / "main.c").write_bytes(GOOD_C + b"/* the answer is 42 */\n")
    store.collect(campaign)
    got = {(s.meta.agent): s for s in store.read_campaign(campaign.h5_path).submissions}
    me = got["me"]
    assert me.status == "error" and "source changed after staging" in me.record.reason
    assert "main.c differs" in me.record.reason and me.record.build is None
    assert got["reference"].status == "not run"  # untouched submissions are not affected


def test_a_removed_staging_record_is_a_mismatch_too(tmp_path):
    campaign = _campaign_with(tmp_path)
    staged = campaign.submissions_dir / "me" / "vec-scatter" / "1"
    os.chmod(staged, 0o755)
    (staged / staging.MANIFEST).unlink()
    sub = Submission.model_validate_json((staged / "submission.json").read_text())
    rec = staging.checked_record(staged, sub, None, required=True)
    assert rec is not None and rec.status == "error" and "staging record" in rec.reason


def test_restaging_a_changed_submission_drops_its_stale_record(tmp_path):
    campaign = _campaign_with(tmp_path)
    rec = JobResult(job_id="me__vec-scatter__1", agent="me", problem="vec-scatter", attempt="1")
    campaign.record_path(rec.job_id).write_text(rec.model_dump_json())
    ref_rec = campaign.record_path("reference__vec-scatter__1")
    ref_rec.write_text(rec.model_copy(update={"agent": "reference", "job_id": "reference__vec-scatter__1"})
                       .model_dump_json())
    (tmp_path / "tree" / "me" / "vec-scatter" / "1" / "main.c").write_bytes(GOOD_C + b"/* v2 */\n")
    ok, bad = load_tree(tmp_path / "tree", PROBLEMS)
    ok.append(reference_submission(load_problems()["vec-scatter"].folder, "vec-scatter"))
    create_campaign(campaign.root, load_site("local"), PlanRequest({"vec-scatter": load_problems()["vec-scatter"]}, ok,
                                                                   bad))
    assert not campaign.finished("me__vec-scatter__1")  # ran on the old source: rerun
    assert campaign.finished("reference__vec-scatter__1")  # unchanged: kept, its staged copy untouched


def test_no_submission_job_spec_names_a_path_of_the_reference(tmp_path):
    campaign = _campaign_with(tmp_path)
    ref_paths = [str(campaign.submissions_dir / "reference"), str(campaign.work_dir / "reference__"),
                 str(campaign.record_path("reference__")).removesuffix(".json"),
                 str(load_problems()["vec-scatter"].folder)]
    for spec in campaign.specs():
        if spec.agent == "reference":
            continue
        text = spec.model_dump_json()
        assert not any(p in text for p in ref_paths), text


# ----------------------------------------------------------------------------- config files


SITE = "name: bad\nscheduler: local\n"


@pytest.mark.parametrize("body,field", [
    ("cores: -1\n", "cores"),
    ("timing_repeats: 0\n", "timing_repeats"),
    ("timing_repeats: -2\n", "timing_repeats"),
    ("limits: {memory_mb: 0}\n", "limits.memory_mb"),
    ("limits: {memory_mb: -512}\n", "limits.memory_mb"),
    ("limits: {cpu_s: 0}\n", "limits.cpu_s"),
    ("limits: {cpu_s: -1}\n", "limits.cpu_s"),
    ("limits: {output_bytes: 0}\n", "limits.output_bytes"),
    ("limits: {output_bytes: -5}\n", "limits.output_bytes"),
    ("limits: {file_size_mb: 0}\n", "limits.file_size_mb"),
    ("limits: {processes: 0}\n", "limits.processes"),
    ("limits: {output_bytes: 4096, flood_bytes: 1024}\n", "limits"),
    ("launcher: {template: ''}\n", "launcher.template"),
    ("batch: {poll_s: 0}\n", "batch.poll_s"),
    ("batch: {retries: -1}\n", "batch.retries"),
    ("batch: {max_array_size: 0}\n", "batch.max_array_size"),
    ("partitions: [{name: p, max_walltime_min: 0}]\n", "partitions.0.max_walltime_min"),
    ("partitions: [{name: p, gpus_per_node: -1}]\n", "partitions.0.gpus_per_node"),
    ("batch: {max_wait_h: .nan}\n", "batch.max_wait_h"),
])
def test_site_numbers_out_of_range_name_file_and_field(tmp_path, body, field):
    """Before: cores -1 hung at '1 queued, 0 running'; negative limits failed every run in
    preexec_fn; timing_repeats 0 scored the reference 36.4 without saying why."""
    p = tmp_path / "bad-site.yaml"
    p.write_text(SITE + body)
    with pytest.raises(ConfigError) as e:
        load_site(str(p))
    assert e.value.path == p and e.value.field == field, str(e.value)


def test_a_non_utf8_site_file_is_a_clear_error_not_a_traceback(tmp_path):
    p = tmp_path / "latin1.yaml"
    p.write_bytes(b"name: caf\xe9\nscheduler: local\n")
    with pytest.raises(ConfigError) as e:
        load_site(str(p))
    assert "not UTF-8" in str(e.value) and "latin1.yaml" in str(e.value)
    proc = hpcbench("run", "--site", str(p), "--out", str(tmp_path / "c"), check=False)
    assert proc.returncode == 2 and "latin1.yaml" in proc.stderr and "not UTF-8" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_bad_site_number_through_the_cli_names_file_and_field(tmp_path):
    p = tmp_path / "neg.yaml"
    p.write_text(SITE + "limits: {memory_mb: -1}\n")
    proc = hpcbench("run", "--site", str(p), "--out", str(tmp_path / "c"), check=False)
    assert proc.returncode == 2 and "neg.yaml" in proc.stderr and "limits.memory_mb" in proc.stderr
    assert not (tmp_path / "c" / "specs").exists()  # refused before anything was planned


@pytest.mark.parametrize("change,field", [
    (lambda c: c["checks"][0].update(rtol=-1e-3), "checks.0.compare.rtol"),
    (lambda c: c["checks"][0].update(fail_factor=1.0), "checks.0.compare.fail_factor"),
    (lambda c: c["checks"][0].update(weight=0), "checks.0.compare.weight"),
])
def test_check_numbers_out_of_range_name_file_and_field(tmp_path, change, field):
    src = load_problems()["vec-scatter"].folder
    d = tmp_path / "vec-scatter"
    d.mkdir()
    (d / "problem.json").write_text((src / "problem.json").read_text())
    checks = json.loads((src / "checks.json").read_text())
    change(checks)
    (d / "checks.json").write_text(json.dumps(checks))
    with pytest.raises(ConfigError) as e:
        load_problem(d)
    assert e.value.path.name == "checks.json" and e.value.field == field, str(e.value)


def test_a_non_utf8_problem_file_is_a_config_error(tmp_path):
    d = tmp_path / "vec-scatter"
    d.mkdir()
    (d / "problem.json").write_bytes(b'{"id": "caf\xe9"}')
    with pytest.raises(ConfigError) as e:
        load_problem(d)
    assert "problem.json" in str(e.value) and "not UTF-8" in str(e.value)


# ----------------------------------------------------------------------------- no reference


def _record(agent: str, stdout: str, exit_code: int | None = 0, status: str = "done") -> JobResult:
    runs = [RunResult(case=c, ranks=3, kind="instrumented", command=["app"], exit_code=exit_code, wall_s=0.1,
                      stdout=stdout) for c in ("default", "larger")]
    return JobResult(job_id=f"{agent}__vec-scatter__1", agent=agent, problem="vec-scatter", attempt="1",
                     status=status, build=BuildResult(command="make", exit_code=0, wall_s=1.0), runs=runs)


GOOD_OUT = "sum: 1.5\nnorm2: 2.0\nweighted_sum: 3.0\nfirst_last: 0.0 1.0\n"


@pytest.mark.parametrize("ref,words", [
    (None, "missing"),
    (_record("reference", GOOD_OUT, status="error"), "ended error"),
    (_record("reference", GOOD_OUT, exit_code=1), "exited 1"),
    (_record("reference", GOOD_OUT, exit_code=None), "was stopped (timeout after 0 s)"),  # was "exited None"
    (_record("reference", "nothing here\n"), "printed no values"),
    (_record("reference", "sum: 1.5\n"), "printed no 'norm2'"),
])
def test_a_problem_without_a_usable_reference_is_not_scored_for_any_submission(ref, words):
    """Before: reference_run checks vanished ('2 checks had no reference value') and the
    submission was scored on what remained."""
    b = load_problems()["vec-scatter"]
    assert reference_problem(b.problem, b.checks, _record("reference", GOOD_OUT)) == ""
    assert words in reference_problem(b.problem, b.checks, ref)
    subs = [StoredSubmission("/submissions/me/vec-scatter/1",
                             Submission(problem="vec-scatter", agent="me", entry="main.c", files=["main.c"]),
                             {"main.c": GOOD_C.decode()}, _record("me", GOOD_OUT), "done")]
    if ref is not None:
        subs.append(StoredSubmission("/submissions/reference/vec-scatter/1",
                                     Submission(problem="vec-scatter", agent="reference", entry="main.c",
                                                files=["main.c"]), {"main.c": GOOD_C.decode()}, ref, ref.status))
    stored = StoredCampaign({}, {}, {"vec-scatter": (b.problem, b.checks)}, subs)
    scores = score_campaign(stored)
    assert len(scores) == len(subs)
    for sc in scores:
        assert sc.status.startswith(NOT_SCORED) and words in sc.status
        assert sc.composite is None and sc.results == []  # no evaluator ran: nothing partial to rank


def test_score_exits_nonzero_naming_the_problem_without_a_reference(tmp_path):
    campaign = _campaign_with(tmp_path)  # planned, never run: no reference record
    store.collect(campaign)
    proc = hpcbench("score", str(campaign.root), check=False)
    assert proc.returncode == 1, proc.stderr
    assert "problem vec-scatter: no reference: not scored" in proc.stderr and "2 submissions" in proc.stderr
    rep = json.loads(hpcbench("report", str(campaign.root), "--format", "json").stdout)
    assert all(r["stop_reason"].startswith(NOT_SCORED) and r["composite"] is None for r in rep["submissions"])
