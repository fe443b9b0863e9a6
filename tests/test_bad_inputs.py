"""Bad input through the command line, table-driven: every case is an `hpcbench` call (in this
process through click's runner: tests/conftest.py `cli`; bench/bad_inputs.py runs each as a process) with
a bad option, file, environment variable or campaign folder, and must end with the expected
exit status and words naming the file, field and reason; never a traceback, never a hang (each
call has a timeout). bench/bad_inputs.py prints the same table for any hpcbench (main's, to
see what each case did before)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import ROOT, cli

GOOD_C = ("#include <petscsys.h>\nint main(int argc, char **argv)\n{\n"
          "  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));\n  PetscCall(PetscFinalize());\n  return 0;\n}\n")
LOCAL = (ROOT / "site-configs" / "local.yaml").read_text()


@dataclass
class Case:
    id: str
    argv: list[str]  # {t}: the case's folder, {c}: a planned campaign, {s}: a scored campaign
    rc: int
    words: list[str]  # each must appear in stdout+stderr ({t} etc. substituted)
    setup: str = ""  # name of a setup step below
    env: dict[str, str] = field(default_factory=dict)
    known: bool = False  # one of the issue's cases (the others are this session's)


def _tree(t: Path, args: list[str] | None = None, ranks: list[int] | None = None, problem: str = "vec-scatter"):
    d = t / "tree" / "me" / problem / "1"
    d.mkdir(parents=True)
    (d / "main.c").write_text(GOOD_C)
    (d / "submission.json").write_text(json.dumps({"entry": "main.c", "files": ["main.c"], "args": args or [],
                                                   "ranks": ranks or []}))


def _with_env(site: str, entry: str) -> str:
    """The bundled site with one more launcher.env entry, added inside its own `env:` block."""
    assert "\n  env:\n" in site, "local.yaml's launcher has no env block to add to"
    return site.replace("\n  env:\n", f"\n  env:\n    {entry}\n", 1)


def _site(t: Path, text: str) -> None:
    (t / "site.yaml").write_text(text)


SETUP = {
    "tree": lambda t: _tree(t),
    "tree-ranks7": lambda t: _tree(t, ranks=[7]),
    "tree-prefix": lambda t: _tree(t, args=["-prefix_push", "x_"]),
    "tree-deep": lambda t: (_tree(t), (t / "tree" / "me" / "vec-scatter" / "1" / "submission.json").write_text(
        '{"entry": "main.c", "files": ["main.c"], "generation": {"x": ' + "[" * 100000 + "]" * 100000 + "}}")),
    "variants-empty": lambda t: _site(t, LOCAL.split("variants:")[0] + "variants: []\nlimits:"
                                      + LOCAL.split("limits:")[1]),
    "variants-twice": lambda t: _site(t, LOCAL.replace("variants:\n",
                                                       "variants:\n  - name: cpu\n    petsc_dir: auto\n")),
    "template-quote": lambda t: _site(t, LOCAL.replace('template: "mpiexec -n {ranks}"',
                                                       "template: \"mpiexec -n {ranks} --map-by 'core\"")),
    "template-field": lambda t: _site(t, LOCAL.replace('template: "mpiexec -n {ranks}"',
                                                       'template: "mpiexec -n {nranks}"')),
    "template-brace": lambda t: _site(t, LOCAL.replace('template: "mpiexec -n {ranks}"',
                                                       'template: "mpiexec -n {ranks"')),
    "env-key": lambda t: _site(t, _with_env(LOCAL, "MY_API_KEY: secret")),
    "env-petsc-options": lambda t: _site(t, _with_env(LOCAL, "PETSC_OPTIONS: '-malloc_debug 0'")),
    "site-key-twice": lambda t: _site(t, LOCAL.replace("launcher:\n", "launcher:\n  env: {MY_VAR: 1}\n")),
    "binds-campaign": lambda t: _site(t, LOCAL + f"\nisolation_binds: [{t}]\n"),
    "binds-problems": lambda t: _site(t, LOCAL + f"\nisolation_binds: [{ROOT / 'problems'}]\n"),
    "binds-relative": lambda t: _site(t, LOCAL + "\nisolation_binds: [opt/tools]\n"),
    "site-yaml-broken": lambda t: _site(t, "name: x\nscheduler: [local\n"),
    "site-yaml-list": lambda t: _site(t, "- name: x\n"),
    "site-unknown-field": lambda t: _site(t, LOCAL + "\ncores_per_socket: 4\n"),
    "site-bad-timeout": lambda t: _site(t, LOCAL + "\nbatch:\n  command_timeout_s: 0\n"),
    # a PBS Pro field in a Slurm site's batch: (each scheduler validates its own settings)
    "site-pbs-field-on-slurm": lambda t: _site(t, (ROOT / "site-configs" / "ci-slurm.yaml").read_text().replace(
        "\nbatch:\n", "\nbatch:\n  whole_nodes: true\n", 1)),
    "site-slurm-field-on-pbs": lambda t: _site(t, (ROOT / "site-configs" / "polaris.yaml").read_text().replace(
        "\nbatch:\n", "\nbatch:\n  signal_margin_s: 30\n", 1)),
    "out-not-empty": lambda t: ((t / "home").mkdir(), (t / "home" / "notes.txt").write_text("mine\n")),
    "template-no-ranks": lambda t: _site(t, LOCAL.replace('template: "mpiexec -n {ranks}"', 'template: "mpiexec"')),
    "cores-beyond": lambda t: _site(t, LOCAL + "\ncores: 100000\n"),
    "file": lambda t: (t / "a.txt").write_text("x\n"),
    "c-binary": lambda t: (t / "x.c").write_bytes(b"\x00\x01\x02int main(){}"),
    "not-campaign": lambda t: (t / "empty").mkdir(),
}

CASES = [
    # --- the issue's cases -------------------------------------------------------------------
    Case("problems-empty", ["submit", "--dry-run", "--problems", "", "--out", "{t}/c"], 2,
         ["--problems", "names no problem"], known=True),
    Case("out-inside-tree", ["submit", "--dry-run", "--submissions", "{t}/tree", "--problems", "vec-scatter",
                             "--out", "{t}/tree/me/c"], 2, ["--out", "inside the submission tree"], "tree", known=True),
    Case("submissions-missing", ["submit", "--dry-run", "--submissions", "/nonexistent/tree", "--out", "{t}/c"], 2,
         ["--submissions", "/nonexistent/tree", "no such folder"], known=True),
    Case("dry-run-llm", ["submit", "--dry-run", "--agent", "litellm:openai/gpt-4o-mini", "--problems", "vec-scatter",
                         "--out", "{t}/c"], 0, ["no LLM asked"], env={"OPENAI_API_KEY": "",
                                                                       "HPCBENCH_BASE_URL": "http://127.0.0.1:9"},
         known=True),
    Case("judge-empty", ["score", "{s}", "--judge", ""], 2, ["--judge", "empty model name"], known=True),
    Case("ranks-7", ["submit", "--dry-run", "--submissions", "{t}/tree", "--problems", "vec-scatter", "--out", "{t}/c"],
         0, ["rejected:", "submission.json: field 'ranks': 7 is not a rank count this problem runs at"],
         "tree-ranks7", known=True),
    Case("args-prefix-push", ["submit", "--dry-run", "--submissions", "{t}/tree", "--problems", "vec-scatter",
                              "--out", "{t}/c"], 0, ["field 'args'", "-prefix_push", "renaming every option"],
         "tree-prefix", known=True),
    Case("variants-empty", ["submit", "--dry-run", "--site", "{t}/site.yaml", "--out", "{t}/c"], 2,
         ["site.yaml", "variants", "at least one PETSc variant"], "variants-empty", known=True),
    Case("variants-twice", ["submit", "--dry-run", "--site", "{t}/site.yaml", "--out", "{t}/c"], 2,
         ["site.yaml", "variants", "'cpu' named twice"], "variants-twice", known=True),
    Case("template-unbalanced-quote", ["submit", "--dry-run", "--site", "{t}/site.yaml", "--out", "{t}/c"], 2,
         ["site.yaml", "launcher.template", "unbalanced quote"], "template-quote", known=True),
    Case("template-unknown-field", ["submit", "--dry-run", "--site", "{t}/site.yaml", "--out", "{t}/c"], 2,
         ["site.yaml", "launcher.template", "unknown field {nranks}"], "template-field", known=True),
    Case("launcher-env-key", ["submit", "--dry-run", "--site", "{t}/site.yaml", "--out", "{t}/c"], 2,
         ["site.yaml", "launcher.env", "MY_API_KEY", "never reaches the sandbox"], "env-key", known=True),
    Case("binds-cover-campaign", ["submit", "--dry-run", "--site", "{t}/site.yaml", "--problems", "vec-scatter",
                                  "--out", "{t}/c"], 2, ["isolation_binds", "the campaign folder"],
         "binds-campaign", known=True),
    Case("binds-cover-problems", ["submit", "--dry-run", "--site", "{t}/site.yaml", "--problems", "vec-scatter",
                                  "--out", "{t}/c"], 2, ["isolation_binds", "hidden checks"],
         "binds-problems", known=True),
    # --- this session's -----------------------------------------------------------------------
    Case("problems-commas", ["submit", "--dry-run", "--problems", ",, ,", "--out", "{t}/c"], 2,
         ["--problems", "names no problem"]),
    Case("problems-unknown", ["submit", "--dry-run", "--problems", "vec-scatter,nosuch", "--out", "{t}/c"], 2,
         ["--problems", "unknown problem ids ['nosuch']"]),
    Case("nested-submission-json", ["submit", "--dry-run", "--submissions", "{t}/tree", "--problems", "vec-scatter",
                                    "--out", "{t}/c"], 0, ["submission.json", "deeper than 32 levels"], "tree-deep"),
    Case("submissions-a-file", ["submit", "--dry-run", "--submissions", "{t}/a.txt", "--out", "{t}/c"], 2,
         ["a.txt", "is a file"], "file"),
    Case("out-a-file", ["submit", "--dry-run", "--out", "{t}/a.txt"], 2, ["a.txt", "is a file"], "file"),
    Case("out-not-a-campaign", ["submit", "--dry-run", "--problems", "vec-scatter", "--out", "{t}/home"], 2,
         ["--out", "notes.txt", "no campaign.json"], "out-not-empty"),
    Case("out-inside-problems", ["submit", "--dry-run", "--problems", "vec-scatter", "--out",
                                 str(ROOT / "problems" / "vec-scatter" / "c")], 2,
         ["--out", "inside the bundled problems"]),
    Case("site-unknown", ["submit", "--dry-run", "--site", "nosuch", "--out", "{t}/c"], 2,
         ["nosuch.yaml", "no such site config"]),
    Case("site-yaml-broken", ["submit", "--dry-run", "--site", "{t}/site.yaml", "--out", "{t}/c"], 2,
         ["site.yaml", "malformed YAML"], "site-yaml-broken"),
    Case("site-yaml-not-mapping", ["submit", "--dry-run", "--site", "{t}/site.yaml", "--out", "{t}/c"], 2,
         ["site.yaml"], "site-yaml-list"),
    Case("site-unknown-field", ["submit", "--dry-run", "--site", "{t}/site.yaml", "--out", "{t}/c"], 2,
         ["site.yaml", "cores_per_socket", "xtra"], "site-unknown-field"),
    Case("site-pbs-field-on-slurm", ["submit", "--dry-run", "--site", "{t}/site.yaml", "--out", "{t}/c"], 2,
         ["site.yaml", "batch.whole_nodes", "Extra inputs"], "site-pbs-field-on-slurm"),
    Case("site-slurm-field-on-pbs", ["submit", "--dry-run", "--site", "{t}/site.yaml", "--out", "{t}/c"], 2,
         ["site.yaml", "batch.signal_margin_s", "Extra inputs"], "site-slurm-field-on-pbs"),
    Case("site-command-timeout-0", ["submit", "--dry-run", "--site", "{t}/site.yaml", "--out", "{t}/c"], 2,
         ["site.yaml", "batch.command_timeout_s"], "site-bad-timeout"),
    Case("binds-relative", ["submit", "--dry-run", "--site", "{t}/site.yaml", "--out", "{t}/c"], 2,
         ["site.yaml", "isolation_binds", "not an absolute path"], "binds-relative"),
    Case("template-unclosed-brace", ["submit", "--dry-run", "--site", "{t}/site.yaml", "--out", "{t}/c"], 2,
         ["site.yaml", "launcher.template", "does not format"], "template-brace"),
    Case("launcher-env-petsc-options", ["submit", "--dry-run", "--site", "{t}/site.yaml", "--out", "{t}/c"], 2,
         ["site.yaml", "launcher.env", "PETSC_OPTIONS"], "env-petsc-options"),
    Case("site-key-twice", ["submit", "--dry-run", "--site", "{t}/site.yaml", "--out", "{t}/c"], 2,
         ["site.yaml", "key 'env' given twice", "keep one"], "site-key-twice"),
    Case("held-out-seed-negative", ["submit", "--dry-run", "--held-out-seed", "-1", "--out", "{t}/c"], 2,
         ["--held-out-seed", "-1"]),
    Case("held-out-seed-changed", ["submit", "--dry-run", "--held-out-seed", "99", "--problems", "vec-scatter",
                                   "--out", "{c}"], 2, ["--held-out-seed 99", "drew its held-out cases with seed 7"]),
    Case("attempts-0", ["run", "--attempts", "0", "--out", "{t}/c"], 2, ["--attempts", "0"]),
    Case("judge-concurrency-0", ["score", "{s}", "--judge", "openai/x", "--judge-concurrency", "0"], 2,
         ["--judge-concurrency"]),
    Case("scoring-id-path", ["score", "{s}", "--scoring-id", "../evil"], 2, ["scoring id '../evil'", "plain name"]),
    Case("scoring-id-unknown", ["report", "{s}", "--scoring-id", "nosuch"], 2, ["no scoring 'nosuch'"]),
    Case("report-out-missing-folder", ["report", "{s}", "--out", "/nonexistent/dir/r.md"], 2,
         ["--out", "/nonexistent/dir: no such folder"]),
    Case("explain-nothing-there", ["explain", "{s}", "/no/such/path"], 2, ["nothing at '/no/such/path'"]),
    Case("status-not-a-campaign", ["status", "{t}/empty"], 2, ["empty", "not a campaign folder"], "not-campaign"),
    Case("collect-not-a-campaign", ["collect", "{t}/empty"], 2, ["empty", "not a campaign folder"], "not-campaign"),
    Case("score-not-collected", ["score", "{c}"], 2, ["campaign.h5", "not collected yet"]),
    Case("cancel-unknown-job", ["cancel", "{c}", "--job", "nosuch__x__1"], 2, ["--job nosuch__x__1", "not in"]),
    Case("wait-negative-timeout", ["wait", "{c}", "--timeout", "-5"], 2, ["--timeout"]),
    Case("lint-missing-file", ["lint", "{t}/nosuch.c"], 2, ["nosuch.c"]),
    Case("lint-binary-file", ["lint", "{t}/x.c"], 2, ["x.c", "binary"], "c-binary"),
    Case("env-store-lock-timeout", ["report", "{s}"], 2, ["HPCBENCH_STORE_LOCK_TIMEOUT", "'soon'"],
         env={"HPCBENCH_STORE_LOCK_TIMEOUT": "soon"}),
    Case("env-score-workers", ["score", "{s}"], 2, ["HPCBENCH_SCORE_WORKERS", "'many'"],
         env={"HPCBENCH_SCORE_WORKERS": "many"}),
    Case("env-account-newline", ["submit", "--dry-run", "--site", "ci-slurm", "--problems", "vec-scatter",
                                 "--out", "{t}/c"], 2, ["HPCBENCH_ACCOUNT", "newline"],
         env={"HPCBENCH_ACCOUNT": "proj\n#SBATCH --qos=high"}),
    Case("campaign-json-garbage", ["status", "{c}"], 2, ["campaign.json", "unreadable"]),
    Case("spec-garbage", ["status", "{c}"], 2, ["specs", ".json", "unreadable"]),
    Case("held-out-json-garbage", ["submit", "--dry-run", "--problems", "vec-scatter", "--out", "{c}"], 2,
         ["held_out.json", "unreadable"]),
    Case("validate-checks-unknown-problem", ["validate-checks", "--problems", "nosuch", "--out", "{t}/v"], 2,
         ["nosuch"]),
    # --- outside review, 5379f62 (accepted silently, or unclear) ---------------------------------
    Case("template-without-ranks", ["submit", "--dry-run", "--site", "{t}/site.yaml", "--out", "{t}/c"], 2,
         ["site.yaml", "launcher.template", "{ranks}"], "template-no-ranks"),
    Case("cores-beyond-this-machine", ["submit", "--dry-run", "--site", "{t}/site.yaml", "--out", "{t}/c"], 2,
         ["site.yaml", "cores", "100000", "this machine lets hpcbench use"], "cores-beyond"),
    Case("lint-empty-folder", ["lint", "{t}/empty"], 2, ["empty", "a folder with no source file"], "not-campaign"),
    Case("sweep-from-not-a-campaign", ["sweep", "--from", "{t}/empty", "--problems", "advection1d", "--dry-run"],
         2, ["empty", "not a campaign folder"], "not-campaign"),
]

# What each campaign-state case breaks in its (copied) planned campaign before the call.
BREAK = {
    "campaign-json-garbage": lambda c: (c / "campaign.json").write_text("{not json"),
    "spec-garbage": lambda c: next(iter(sorted((c / "specs").glob("*.json")))).write_text("[]"),
    "held-out-json-garbage": lambda c: (c / "snapshot" / "held_out.json").write_text("{\"seed\": "),
}


def hpcbench_cmd() -> list[str]:
    """The hpcbench under test: this checkout's, or HPCBENCH_CMD (bench/bad_inputs.py: main's)."""
    return shlex.split(os.environ.get("HPCBENCH_CMD", shlex.quote(str(Path(sys.executable).parent / "hpcbench"))))


def run_case(case: Case, t: Path, campaigns: tuple[Path, Path], timeout: float = 180) -> subprocess.CompletedProcess:
    t.mkdir(parents=True, exist_ok=True)
    if case.setup:
        SETUP[case.setup](t)
    planned, scored = campaigns
    c = t / "campaign"
    if "{c}" in " ".join(case.argv):
        shutil.copytree(planned, c)
        if case.id in BREAK:
            BREAK[case.id](c)
    argv = [a.replace("{t}", str(t)).replace("{c}", str(c)).replace("{s}", str(scored)) for a in case.argv]
    if "HPCBENCH_CMD" not in os.environ:  # this checkout's: in this process (tests/conftest.py cli)
        return cli(*argv, env=case.env, cwd=t, timeout=timeout)
    env = {**os.environ, **case.env}
    return subprocess.run([*hpcbench_cmd(), *argv], capture_output=True, text=True, cwd=t, env=env, timeout=timeout)


def make_campaigns(root: Path) -> tuple[Path, Path]:
    """A planned campaign (dry run, held-out seed 7) and a collected and scored one (no job run)."""
    planned = root / "planned"
    cmd = hpcbench_cmd()
    plan = [*cmd, "submit", "--dry-run", "--problems", "vec-scatter", "--out", str(planned)]
    if subprocess.run([*plan, "--held-out-seed", "7"], capture_output=True, text=True).returncode != 0:
        subprocess.run(plan, capture_output=True, text=True, check=True)  # an hpcbench without held-out cases
    scored = root / "scored"
    shutil.copytree(planned, scored)
    subprocess.run([*cmd, "collect", str(scored)], capture_output=True, text=True, check=True)
    subprocess.run([*cmd, "score", str(scored)], capture_output=True, text=True)  # exit 1: no reference ran
    return planned, scored


@pytest.fixture(scope="module")
def campaigns(tmp_path_factory):
    return make_campaigns(tmp_path_factory.mktemp("bad-inputs"))


@pytest.mark.petsc
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case, campaigns, tmp_path):
    p = run_case(case, tmp_path / "t", campaigns)
    out = p.stdout + p.stderr
    assert "Traceback" not in out, out
    assert p.returncode == case.rc, f"exit {p.returncode}, want {case.rc}:\n{out}"
    for w in case.words:
        w = w.replace("{t}", str(tmp_path / "t"))
        assert w in out, f"{w!r} not in:\n{out}"


def test_the_table_holds_the_issues_cases_and_at_least_25_more():
    assert sum(c.known for c in CASES) >= 12 and sum(not c.known for c in CASES) >= 25
    assert len({c.id for c in CASES}) == len(CASES)
