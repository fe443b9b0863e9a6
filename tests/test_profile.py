"""Campaign profiles (hpcbench/profile.py): what makes one campaign differ from another is one
typed object, recorded in campaign.json and applied by planning alone; escalations the pipeline
makes after a job ran are recorded and planned again; the build cache reuses a binary only for
the same sources, PETSc and makefile."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from hpcbench.errors import ConfigError
from hpcbench.plan import PlanRequest, create_campaign
from hpcbench.plan import escalations as esc
from hpcbench.plan.campaign import Campaign, replan
from hpcbench.problem import load_problems
from hpcbench.profile import FULL, PROFILES, QUICK, CampaignProfile, load_profile, sweep_profile
from hpcbench.site import load_site
from hpcbench.submission import reference_submission

PROBLEMS = load_problems()


def _request(*pids: str) -> PlanRequest:
    problems = {p: PROBLEMS[p] for p in pids}
    return PlanRequest(problems, [reference_submission(b.folder, p) for p, b in problems.items()])


def test_named_profiles_and_files_load_and_a_bad_file_names_its_field(tmp_path):
    assert load_profile("full") is FULL and load_profile("quick") is QUICK
    assert {"full", "quick", "checks-library", "generated", "validate-performance", "calibrate"} <= set(PROFILES)
    mine = tmp_path / "mine.yaml"
    mine.write_text("name: mine\nvalgrind: 'off'\ntiming_repeats: 2\n")
    assert load_profile(str(mine)) == CampaignProfile(name="mine", valgrind="off", timing_repeats=2)
    mine.write_text("name: mine\nvalgrnd: 'off'\n")  # a typo is an error, never ignored
    with pytest.raises(ConfigError) as e:
        load_profile(str(mine))
    assert "mine.yaml" in str(e.value) and "valgrnd" in str(e.value)
    mine.write_text("name: mine\ntime_limit_factor: -1\n")
    with pytest.raises(ConfigError, match="time_limit_factor"):
        load_profile(str(mine))
    with pytest.raises(ConfigError, match="neither a profile"):
        load_profile("no-such-profile")


def test_planning_applies_the_profile_and_records_it(tmp_path):
    """The same programs on the same site: the full profile asks for every instrument and the
    performance case, quick for none of them; the profile is in campaign.json."""
    site = load_site("local")
    full, fplan = create_campaign(tmp_path / "full", site, _request("rosenbrock"), FULL)
    quick, qplan = create_campaign(tmp_path / "quick", site, _request("rosenbrock"), QUICK)
    (f,), (q,) = fplan.jobs, qplan.jobs
    assert f.valgrind and f.malloc_debug and f.timing_repeats == site.timing_repeats and f.perf is not None
    assert not q.valgrind and not q.malloc_debug and q.timing_repeats == 1 and q.perf is None
    # the same published cases; quick keeps the first of full's held-out cases (held_out_cases=1)
    held = [r.case for r in f.runs if r.case.startswith("held-out-")]
    assert len(set(held)) == 3 and QUICK.held_out_cases == 1
    assert [r.case for r in q.runs] == [r.case for r in f.runs if r.case not in held[1:]]
    assert full.profile() == FULL and quick.profile() == QUICK
    assert json.loads(quick.manifest_path.read_text())["profile"]["name"] == "quick"
    # time limits scaled, the case selection applied and snapshotted as run
    slow = CampaignProfile(name="slow", time_limit_factor=3.0, cases="cheapest", held_out=False)
    c, plan = create_campaign(tmp_path / "slow", site, _request("rosenbrock"), slow)
    (j,) = plan.jobs
    cheapest = min(PROBLEMS["rosenbrock"].problem.cases, key=lambda x: (min(x.ranks), x.time_limit_s))
    assert [(r.case, r.ranks, r.time_limit_s) for r in j.runs] == [(cheapest.name, min(cheapest.ranks),
                                                                    cheapest.time_limit_s * 3.0)]
    snap = json.loads((c.root / "snapshot/problems/rosenbrock/problem.json").read_text())
    assert [x["name"] for x in snap["cases"]] == [cheapest.name] and "held_out" not in snap


def test_a_sweep_profile_plans_one_variant_with_ranks_that_yield(tmp_path):
    site = load_site("local")
    _, plan = create_campaign(tmp_path / "s", site, _request("vec-scatter"), sweep_profile("cpu", 4))
    (j,) = plan.jobs
    assert j.variant.name == "cpu" and j.timing_repeats == 4 and not j.valgrind
    assert j.launcher.env.get("OMPI_MCA_mpi_yield_when_idle") == "1"
    _, plain = create_campaign(tmp_path / "f", site, _request("vec-scatter"), FULL)
    assert "OMPI_MCA_mpi_yield_when_idle" not in plain.jobs[0].launcher.env


def test_an_escalation_is_planned_again_and_keeps_the_record_it_ran_for(tmp_path):
    """The pipeline retries a starved time-out with longer limits, or adds valgrind to a program
    that passed: recorded, a re-plan writes the spec that ran (its record stays); the program's
    sources changing drops the escalation."""
    site = load_site("local")
    campaign, plan = create_campaign(tmp_path / "c", site, _request("vec-scatter"), QUICK)
    (j,) = plan.jobs
    campaign.record_path(j.job_id).write_text("{}")  # as if it had run
    esc.add(campaign.root, [j.job_id], time_limit_factor=4.0)
    again = replan(campaign, site, _request("vec-scatter"), QUICK, plan)
    assert [r.time_limit_s for r in again.jobs[0].runs] == [4.0 * r.time_limit_s for r in j.runs]
    assert not campaign.finished(j.job_id)  # the spec changed: the old record is stale
    campaign.record_path(j.job_id).write_text("{}")
    esc.add(campaign.root, [j.job_id], valgrind=True)
    _, same = create_campaign(tmp_path / "c", site, _request("vec-scatter"), QUICK)
    assert same.jobs[0].valgrind and campaign.finished(j.job_id) is False  # valgrind added: runs again
    campaign.record_path(j.job_id).write_text("{}")
    create_campaign(tmp_path / "c", site, _request("vec-scatter"), QUICK)  # planned again, unchanged
    assert campaign.finished(j.job_id)
    assert esc.read(campaign.root)[j.job_id] == esc.Escalation(time_limit_factor=4.0, valgrind=True)
    (tmp_path / "c/escalations.json").write_text("[not a mapping")
    with pytest.raises(Exception, match="escalations.json"):
        esc.read(campaign.root)


def test_core_slots_are_the_machines_unless_the_profile_says_otherwise(tmp_path):
    """Two campaigns running here at once take turns on the cores (the machine's slots, the
    default); a profile may give a campaign slots of its own, or name a folder."""
    from hpcbench.executors import executor_for

    site = load_site("local")
    a, _ = create_campaign(tmp_path / "a", site, _request("vec-scatter"), QUICK)
    b, _ = create_campaign(tmp_path / "b", site, _request("vec-scatter"), FULL)
    machine = executor_for(site, a)._slots_dir()
    assert machine == executor_for(site, b)._slots_dir() == site.local_layout().machine_slots()
    assert str(os.getuid()) in str(machine) and tmp_path not in machine.parents
    fewer = site.model_copy(update={"cores": 1})  # other cores offered: other slots
    assert executor_for(fewer, a)._slots_dir() != machine
    named = QUICK.model_copy(update={"core_slots": str(tmp_path / "slots")})
    own = QUICK.model_copy(update={"core_slots": "campaign"})
    c, _ = create_campaign(tmp_path / "c", site, _request("vec-scatter"), named)
    d, _ = create_campaign(tmp_path / "d", site, _request("vec-scatter"), own)
    assert executor_for(site, c)._slots_dir() == tmp_path / "slots"
    assert executor_for(site, d)._slots_dir() == Campaign(tmp_path / "d").work_dir / ".core-slots"


@pytest.mark.petsc
def test_the_build_cache_reuses_a_binary_only_for_the_same_inputs(tmp_path):
    from hpcbench.jobs import build_cache
    from hpcbench.jobs.build import BINARY_NAME
    from hpcbench.petsc_env import find_petsc

    petsc = find_petsc()
    src = PROBLEMS["vec-scatter"].reference_dir
    cache = tmp_path / "cache"

    def build(name: str, edit: str = "") -> object:
        d = tmp_path / name
        shutil.copytree(src, d)
        if edit:
            (d / "main.c").write_text((d / "main.c").read_text() + edit)
        return build_cache.build(str(cache), d, ["main.c"], "main.c", petsc, timeout_s=300)

    first = build("a")
    assert first.exit_code == 0 and not first.cached
    again = build("b")
    assert again.cached and again.exit_code == 0 and again.stdout == first.stdout and again.command == first.command
    assert (tmp_path / "b" / BINARY_NAME).read_bytes() == (tmp_path / "a" / BINARY_NAME).read_bytes()
    changed = build("c", "\n/* one more line */\n")
    assert changed.exit_code == 0 and not changed.cached  # other sources: built
    broken = build("d", "\nthis does not compile\n")
    assert broken.exit_code != 0 and not build("e", "\nthis does not compile\n").cached  # failures never stored
    assert len(list(cache.glob("*/*"))) == 2


def test_no_build_cache_where_programs_run_unsandboxed(tmp_path):
    """With isolation: none a program runs with the user's rights and could write into the cache
    what another job would then run: planning gives such a site none."""
    site = load_site("local")
    _, plan = create_campaign(tmp_path / "c", site, _request("vec-scatter"), QUICK)
    assert plan.jobs[0].build_cache
    bare = site.model_copy(update={"isolation": "none"})
    _, plan = create_campaign(tmp_path / "d", bare, _request("vec-scatter"), QUICK)
    assert plan.jobs[0].build_cache == ""
    off = site.model_copy(update={"build_cache": "none"})
    _, plan = create_campaign(tmp_path / "e", off, _request("vec-scatter"), QUICK)
    assert plan.jobs[0].build_cache == ""
