"""campaign.h5: the single file a campaign's results live in.

Written only by `collect` (and `score`, which adds /scores groups); jobs never
touch it. Every write goes to a temporary file that replaces the old one, so a
crash leaves the previous file intact, and collecting twice gives the same file.

Layout
    /                        attrs: provenance (hpcbench version, git commit, site,
                             PETSc version and configure options, MPI, compilers)
    /manifest                campaign.json as collected
    /problems/<id>           attrs problem_json (public), checks_json (hidden)
    /petsc                   errorcode_functions, deprecated (name, note): the API facts
                             of the campaign's PETSc headers (hpcbench.petsc_headers)
    /submissions/<agent>/<problem>/<attempt>
        attrs                submission_json, job_id, status, reason, host, wall_s ...
        record               the job's full JSON record (canonical, re-loadable)
        sources/<file>       the program as submitted
        build                attrs exit_code, wall_s, command; stdout, stderr
        runs/<NNN>           attrs case, ranks, kind, exit_code, wall_s, petsc_time_s ...;
                             stdout, stderr, log_view (compound), leaks (compound)
        timings              compound: case, ranks, exec_s, wall/null medians
    /scores/<scoring-id>/... written by hpcbench.scoring
    /judge_cache/<key>       judge answers by (model, prompt version, prompt sha256),
                             written by scoring (hpcbench.judge.cache)
"""

from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np

from hpcbench import staging
from hpcbench.campaign import Campaign
from hpcbench.jobs.records import JobResult, RunResult
from hpcbench.petsc_headers import PetscApi, scan_install
from hpcbench.problem import Checks, Problem, load_problems
from hpcbench.submission import Submission

STR = h5py.string_dtype("utf-8")


def _text(group: h5py.Group, name: str, value: str) -> None:
    group.create_dataset(name, data=value, dtype=STR)


def _attrs(obj: h5py.HLObject, **kv: object) -> None:
    for k, v in kv.items():
        if v is None:
            v = ""
        obj.attrs[k] = v


LOG_DTYPE = np.dtype([("path", STR), ("name", STR), ("time_s", "f8"), ("time_pct", "f8"),
                      ("time_max_ratio", "f8"), ("calls_per_parent", "f8"), ("mflops", "f8"),
                      ("mbps", "f8"), ("reductions_per_s", "f8")])
LEAK_DTYPE = np.dtype([("rank", "i4"), ("bytes", "i8"), ("function", STR), ("file", STR), ("line", "i4")])
TIMING_DTYPE = np.dtype([("case", STR), ("ranks", "i4"), ("repeats", "i4"), ("wall_median_s", "f8"),
                         ("null_median_s", "f8"), ("exec_s", "f8"), ("petsc_time_median_s", "f8"),
                         ("wall_minus_null_s", "f8"), ("exec_source", STR), ("oversubscribed", "?")])


def _write_run(g: h5py.Group, run: RunResult) -> None:
    _attrs(g, case=run.case, ranks=run.ranks, kind=run.kind, repeat=run.repeat, variant=run.variant,
           exit_code=-1 if run.exit_code is None else run.exit_code, signal=run.signal or 0,
           timed_out=run.timed_out, stopped_reason=run.stopped_reason, wall_s=run.wall_s,
           oversubscribed=run.oversubscribed, stdout_truncated=run.stdout_truncated,
           stderr_truncated=run.stderr_truncated, stdout_bytes=run.stdout_bytes,
           stderr_bytes=run.stderr_bytes, command=json.dumps(run.command),
           petsc_time_s=np.nan if not run.log_view or run.log_view.total_time_s is None
           else run.log_view.total_time_s, hostnames=",".join(run.hostnames))
    _text(g, "stdout", run.stdout)
    _text(g, "stderr", run.stderr)
    if run.log_view and run.log_view.events:
        rows = [(e.path, e.name, e.time_s, e.time_pct, e.time_max_ratio, e.calls_per_parent, e.mflops,
                 e.mbps, e.reductions_per_s) for e in run.log_view.events]
        g.create_dataset("log_view", data=np.array(rows, dtype=LOG_DTYPE))
    if run.malloc_dump_seen:
        rows = [(lk.rank, lk.bytes, lk.function, lk.file, lk.line) for lk in run.leaks]
        g.create_dataset("leaks", data=np.array(rows, dtype=LEAK_DTYPE))
    if run.options_left:
        g.create_dataset("options_left", data=run.options_left, dtype=STR)
    if run.valgrind:
        _text(g, "valgrind", run.valgrind.model_dump_json())
        _attrs(g, valgrind_submission_lost_bytes=run.valgrind.submission_lost_bytes,
               valgrind_submission_invalid=run.valgrind.submission_invalid_accesses,
               valgrind_definitely_lost_bytes=run.valgrind.definitely_lost_bytes)


def _write_submission(g: h5py.Group, sub: Submission, sub_dir: Path, rec: JobResult | None) -> None:
    _attrs(g, submission_json=sub.model_dump_json(), refused=sub.refused)
    src = g.create_group("sources")
    for name in sub.files if not sub.refused else []:
        path = sub_dir / name
        if path.is_file():
            _text(src, name, path.read_text(errors="replace"))
    if rec is None:
        status = "refused" if sub.refused else "generation failed" if sub.generation_error else "not run"
        _attrs(g, status=status, reason=sub.generation_error, generation_error_kind=sub.generation_error_kind)
        return
    _attrs(g, job_id=rec.job_id, status=rec.status, reason=rec.reason, hostname=rec.hostname,
           scheduler=rec.scheduler, scheduler_job_id=rec.scheduler_job_id, wall_s=rec.wall_s,
           started=rec.started, finished=rec.finished, petsc_version=rec.petsc_version, cores=rec.cores)
    _text(g, "record", rec.model_dump_json())
    if rec.build:
        b = g.create_group("build")
        _attrs(b, command=rec.build.command, exit_code=rec.build.exit_code, timed_out=rec.build.timed_out,
               wall_s=rec.build.wall_s, stdout_truncated=rec.build.stdout_truncated,
               stderr_truncated=rec.build.stderr_truncated)
        _text(b, "stdout", rec.build.stdout)
        _text(b, "stderr", rec.build.stderr)
        _text(b, "makefile", rec.build.makefile)
    runs = g.create_group("runs")
    for i, run in enumerate(rec.runs):
        _write_run(runs.create_group(f"{i:03d}"), run)
    if rec.timings:
        rows = [(t.case, t.ranks, t.repeats, t.wall_median_s, t.null_median_s, t.exec_s,
                 np.nan if t.petsc_time_median_s is None else t.petsc_time_median_s, t.wall_minus_null_s,
                 t.exec_source, t.oversubscribed)
                for t in rec.timings]
        g.create_dataset("timings", data=np.array(rows, dtype=TIMING_DTYPE))


def write_petsc_api(f: h5py.File, variants: dict[str, dict]) -> None:
    """/petsc: the PetscErrorCode functions and deprecated names of the PETSc the
    campaign used (union over its variants), read from that PETSc's headers, so
    the convention checks are exact for that version and need only this file.
    Headers that cannot be read leave /petsc with an `error` attribute: scoring
    then falls back to name prefixes at lower confidence."""
    g = f.create_group("petsc")
    api: PetscApi | None = None
    errors = []
    for name, v in sorted(variants.items()):
        if not v.get("petsc_dir"):
            continue
        try:
            got = scan_install(v["petsc_dir"], v.get("petsc_arch", ""))
        except (OSError, FileNotFoundError) as e:
            errors.append(f"variant {name}: {e}")
            continue
        if api is None:
            api = got
        else:
            api.errorcode_functions |= got.errorcode_functions
            api.deprecated.update(got.deprecated)
            api.source += f"; {got.source}"
    if api is None:
        _attrs(g, error="; ".join(errors) or "no PETSc variant with a petsc_dir in the manifest")
        return
    _attrs(g, version=api.version, source=api.source, error="; ".join(errors),
           method="PETSC_EXTERN/static inline PetscErrorCode declarations, forwarding macros, "
                  "PETSC_DEPRECATED_* markings and 'Level: deprecated' manual pages in <include>/*.h")
    g.create_dataset("errorcode_functions", data=sorted(api.errorcode_functions), dtype=STR)
    rows = sorted(api.deprecated.items())
    g.create_dataset("deprecated", data=np.array(rows, dtype=np.dtype([("name", STR), ("note", STR)])))


def read_petsc_api(f: h5py.File) -> PetscApi | None:
    g = f.get("petsc")
    if g is None or "errorcode_functions" not in g:
        return None
    api = PetscApi(version=str(g.attrs.get("version", "")), source=f"{f.filename}:/petsc")
    api.errorcode_functions = {x.decode() if isinstance(x, bytes) else str(x) for x in g["errorcode_functions"][()]}
    if "deprecated" in g:
        for row in g["deprecated"][()]:
            name, note = (x.decode() if isinstance(x, bytes) else str(x) for x in row)
            api.deprecated[name] = note
    return api


def collect(campaign: Campaign, problems_root: Path | None = None) -> dict[str, int]:
    """Merge every job record and staged submission into campaign.h5."""
    m = campaign.manifest()
    bundles = load_problems(problems_root, m.problems)
    tmp = campaign.h5_path.with_name(f".campaign.h5.{os.getpid()}.tmp")
    counts = {"submissions": 0, "records": 0, "missing": 0}
    first_rec: JobResult | None = None
    try:
        with h5py.File(tmp, "w") as f:
            _text(f, "manifest", m.model_dump_json())
            pg = f.create_group("problems")
            for pid, b in bundles.items():
                g = pg.create_group(pid)
                _attrs(g, problem_json=b.problem.model_dump_json(), checks_json=b.checks.model_dump_json())
            write_petsc_api(f, m.petsc)
            sg = f.create_group("submissions")
            for meta_path in sorted(campaign.submissions_dir.glob("*/*/*/submission.json")):
                sub = Submission.model_validate_json(meta_path.read_text())
                rec_path = campaign.record_path(f"{sub.agent}__{sub.problem}__{sub.attempt}")
                rec = JobResult.model_validate_json(rec_path.read_text()) if rec_path.is_file() else None
                rec = staging.checked_record(meta_path.parent, sub, rec, required=m.staging > 0)
                counts["submissions"] += 1
                counts["records" if rec else "missing"] += 0 if sub.refused or sub.generation_error else 1
                if rec and first_rec is None and rec.petsc_version:
                    first_rec = rec
                g = sg.create_group(f"{sub.agent}/{sub.problem}/{sub.attempt}")
                _write_submission(g, sub, meta_path.parent, rec)
            cpu = next(iter(m.petsc.values()), {})
            _attrs(f, hpcbench_version=m.hpcbench_version, git_commit=m.git_commit, site=m.site,
                   campaign_id=m.campaign_id, created=m.created,
                   collected=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                   petsc_version=first_rec.petsc_version if first_rec else cpu.get("version", ""),
                   petsc_configure_options=first_rec.petsc_configure_options if first_rec
                   else cpu.get("configure_options", ""),
                   mpi=first_rec.mpi_version if first_rec else "",
                   compilers=json.dumps(first_rec.compilers if first_rec else {}))
            if campaign.h5_path.is_file():  # scorings and paid-for judge answers survive a re-collect
                with h5py.File(campaign.h5_path, "r") as old:
                    for kept in ("scores", "judge_cache"):
                        if kept in old:
                            old.copy(kept, f)
        os.replace(tmp, campaign.h5_path)
    finally:
        tmp.unlink(missing_ok=True)
    return counts


# ----------------------------------------------------------------------------- reading


@dataclass
class StoredSubmission:
    path: str  # HDF5 path of the submission group
    meta: Submission
    sources: dict[str, str]
    record: JobResult | None
    status: str


@dataclass
class StoredCampaign:
    attrs: dict
    manifest: dict
    problems: dict[str, tuple[Problem, Checks]]
    submissions: list[StoredSubmission]
    petsc_api: PetscApi | None = None  # from /petsc; None for campaigns collected before it existed


def read_campaign(h5_path: Path) -> StoredCampaign:
    with h5py.File(h5_path, "r") as f:
        attrs = {k: (v.item() if hasattr(v, "item") else v) for k, v in f.attrs.items()}
        manifest = json.loads(f["manifest"][()].decode())
        problems = {
            pid: (Problem.model_validate_json(g.attrs["problem_json"]),
                  Checks.model_validate_json(g.attrs["checks_json"]))
            for pid, g in f["problems"].items()
        }
        subs: list[StoredSubmission] = []
        for _agent, ag in f["submissions"].items():
            for _prob, pg in ag.items():
                for _att, g in pg.items():
                    meta = Submission.model_validate_json(g.attrs["submission_json"])
                    sources = {}
                    g["sources"].visititems(
                        lambda n, o, s=sources: s.__setitem__(n, o[()].decode())
                        if isinstance(o, h5py.Dataset) else None)
                    rec = JobResult.model_validate_json(g["record"][()].decode()) if "record" in g else None
                    subs.append(StoredSubmission(g.name, meta, sources, rec, str(g.attrs.get("status", ""))))
        api = read_petsc_api(f)
    return StoredCampaign(attrs, manifest, problems, subs, api)
