"""Adversarial submissions through the real pipeline (`hpcbench run`, bubblewrap,
PETSc's makefiles, Open MPI): each tries what a cheating or hostile program would
try and the test checks it got nothing, or was stopped with its reason recorded.

One campaign runs as root (cgroups: memory and pids per step), one as the
unprivileged user `nobody` (user namespaces, rlimits only), both with canary keys
in the caller's environment."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from hpcbench.jobs.sandbox import bwrap_works

ROOT = Path(__file__).resolve().parent.parent
CANARIES = {"HPCBENCH_JUDGE_API_KEY": "canary-judge-4f1c", "OPENAI_API_KEY": "canary-openai-9a2e",
            "HPCBENCH_API_KEY": "canary-gen-77d0"}
DAEMON_NAME = "hpcbdaemon"

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not bwrap_works()[0], reason=f"bubblewrap unusable here: {bwrap_works()[1]}")]

SNOOP = r"""
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>
extern char **environ;
static const char *targets[] = { TARGETS NULL };
static void try_read(const char *p) {
  int fd = open(p, O_RDONLY);
  char buf[64];
  if (fd >= 0 && read(fd, buf, sizeof buf) >= 0) printf("READ %s\n", p);
  else printf("DENIED %s (%s)\n", p, strerror(errno));
  if (fd >= 0) close(fd);
  fd = open(p, O_WRONLY | O_APPEND);
  if (fd >= 0) { printf("WRITABLE %s\n", p); close(fd); }
}
static void scan(const char *path, const char *what) {  /* every /proc/<pid>/{environ,cmdline} */
  char buf[65536]; int fd = open(path, O_RDONLY); if (fd < 0) return;
  ssize_t n = read(fd, buf, sizeof buf - 1); close(fd); if (n <= 0) return;
  for (ssize_t i = 0; i < n; i++) if (!buf[i]) buf[i] = ' ';
  buf[n] = 0;
  if (strstr(buf, "canary") || strstr(buf, "hpcbench.jobs") || strstr(buf, " run --"))
    printf("LEAK %s %s\n", what, path);
}
int main(void) {
  for (int i = 0; targets[i]; i++) try_read(targets[i]);
  for (char **e = environ; *e; e++) if (strstr(*e, "canary") || strstr(*e, "API_KEY")) printf("LEAK env %s\n", *e);
  DIR *d = opendir("/proc"); struct dirent *de;
  while (d && (de = readdir(d))) {
    char p[512];
    snprintf(p, sizeof p, "/proc/%s/environ", de->d_name); scan(p, "environ");
    snprintf(p, sizeof p, "/proc/%s/cmdline", de->d_name); scan(p, "cmdline");
  }
  if (d) closedir(d);
  char cwd[4096], up[8192];
  if (getcwd(cwd, sizeof cwd)) {  /* walk up from the run folder: list every folder above it */
    strcpy(up, cwd);
    for (;;) {
      DIR *u = opendir(up);
      while (u && (de = readdir(u))) printf("LIST %s/%s\n", up, de->d_name);
      if (u) closedir(u);
      char *slash = strrchr(up, '/');
      if (!slash || slash == up) break;
      *slash = 0;
    }
  }
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(PORT)};
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  printf(connect(s, (struct sockaddr *)&a, sizeof a) == 0 ? "NETWORK reached\n" : "NETWORK none\n");
  try_read("main.c");  /* the probe itself works: its own file is there */
  printf("DONE\n");
  return 0;
}
"""

INCBIN = r"""
#include <stdio.h>
__asm__(".section .rodata\n.global hidden_blob\nhidden_blob:\n.incbin \"HIDDEN\"\n.byte 0\n.text\n");
extern const char hidden_blob[];
int main(void) { puts(hidden_blob); return 0; }
"""

DAEMON = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/prctl.h>
static void escape(const char *f) {
  FILE *fp = fopen(f, "w");
  if (fp && fprintf(fp, "%d\n", getpid()) > 0 && fclose(fp) == 0) printf("ESCAPED into %s\n", f);
  else printf("could not write %s\n", f);
}
int main(void) {
  fflush(stdout);
  if (fork() == 0) {
    setsid();
    if (fork() != 0) _exit(0);  /* double fork: reparented, out of the launcher's sight */
    prctl(PR_SET_NAME, "DAEMON", 0, 0, 0);
    escape("/sys/fs/cgroup/pids/cgroup.procs");
    escape("/sys/fs/cgroup/memory/cgroup.procs");
    escape("/sys/fs/cgroup/unified/cgroup.procs");
    escape("/sys/fs/cgroup/cgroup.procs");
    fflush(stdout);
    int null = open("/dev/null", O_RDWR);  /* as daemon(3) does: the launcher stops waiting for it */
    dup2(null, 0); dup2(null, 1); dup2(null, 2);
    for (;;) sleep(1);
  }
  sleep(1);
  printf("parent leaves\n");
  return 0;
}
""".replace("DAEMON\"", DAEMON_NAME + "\"")

DEVZERO = '#include "/dev/zero"\nint main(void) { return 0; }\n'

# Four processes of 2 GB each: every one under a 4 GB per-process limit, all together over the job's.
HOG = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
int main(void) {
  const char *r = getenv("OMPI_COMM_WORLD_RANK");
  if (r && strcmp(r, "0") == 0) fork();  /* 3 ranks + 1 child: 4 x 2 GB */
  size_t n = (size_t)2 << 30;
  char *p = malloc(n);
  if (!p) { printf("malloc failed\n"); return 3; }
  memset(p, 1, n);
  long sum = 0;  /* read back, or the optimiser drops the allocation */
  for (size_t i = 0; i < n; i += 4096) sum += p[i];
  printf("touched 2 GB (%ld)\n", sum);
  sleep(5);
  while (wait(NULL) > 0) {}
  return 0;
}
"""

DISKHOG = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void) {
  static char block[1 << 20];
  memset(block, 7, sizeof block);
  char name[64];
  for (int f = 0; f < 64; f++) {  /* 64 files of 16 MB: each under the file-size limit */
    snprintf(name, sizeof name, "junk.%d.%d", (int)getpid(), f);
    FILE *fp = fopen(name, "w");
    if (!fp) return 4;
    for (int i = 0; i < 16; i++) fwrite(block, 1, sizeof block, fp);
    fclose(fp);
  }
  printf("wrote 1 GB\n");
  return 0;
}
""".replace("#include <string.h>", "#include <string.h>\n#include <unistd.h>")


def _submission(tree: Path, agent: str, source: str) -> None:
    d = tree / agent / "vec-scatter" / "1"
    d.mkdir(parents=True)
    (d / "main.c").write_text(source)
    (d / "submission.json").write_text(json.dumps({
        "problem": "vec-scatter", "agent": agent, "model": "adversarial test program", "attempt": "1",
        "entry": "main.c", "files": ["main.c"]}))


def _site(path: Path, **limits) -> Path:
    lim = {"cpu_s": 600, "memory_mb": 4096, "file_size_mb": 256, "disk_mb": 200, "processes": 256,
           "output_bytes": 1 << 20, "flood_bytes": 64 << 20, **limits}
    path.write_text(json.dumps({
        "name": "sandbox-test", "scheduler": "local", "isolation": "bwrap",
        "launcher": {"template": "mpiexec -n {ranks}", "oversubscribe_flag": "--oversubscribe"},
        "variants": [{"name": "cpu", "petsc_dir": "auto"}], "limits": lim,
        "timing_repeats": 1, "valgrind": False}))
    return path


def _targets(out: Path, decoy: Path) -> list[Path]:
    return [out / "campaign.json", out / "specs" / "reference__vec-scatter__1.json",
            out / "submissions" / "reference" / "vec-scatter" / "1" / "main.c",
            out / "submissions" / "snoop" / "vec-scatter" / "1" / "main.c",
            out / "records" / "reference__vec-scatter__1.json", out / "campaign.h5",
            out / "work" / "reference__vec-scatter__1" / "build" / "app",
            out / "work" / "reference__vec-scatter__1" / "build" / "main.c",
            out / "work" / "planted" / "secret.txt", out / "planted-secret.txt",
            ROOT / "problems" / "vec-scatter" / "checks.json",
            ROOT / "problems" / "vec-scatter" / "reference" / "main.c",
            ROOT / "hpcbench" / "__init__.py", ROOT / "site-configs" / "local.yaml",
            Path(sys.prefix) / "pyvenv.cfg", decoy / "campaign.json", Path("/etc/shadow"),
            Path("/etc/munge/munge.key"), Path("/root/.bash_history")]


def _listener() -> tuple[object, int]:
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    return s, s.getsockname()[1]


def _campaign(base: Path, agents: dict[str, str]) -> Path:
    """Plant the secrets, write the adversarial tree and run it through `hpcbench run`
    (as root: the driver's Python lives under /root here), keeping the work folders."""
    out = base / "campaign"
    decoy = base.parent / f"{base.name}-other-campaign"
    decoy.mkdir()
    (decoy / "campaign.json").write_text('{"secret": "other"}')
    site_file = _site(base / "site.yaml")
    exe = Path(sys.executable).parent / "hpcbench"
    # hpcbench refuses to write a campaign into a folder that already holds other things, so
    # the planted files go into a campaign that exists (a dry run creates it): files a user or
    # another job left there later are what the sandbox must hide.
    subprocess.run([str(exe), "run", "--profile", "quick", "--agent", "reference", "--problems", "vec-scatter",
                    "--site", str(site_file), "--out", str(out), "--dry-run"], check=True, capture_output=True,
                   cwd=base, timeout=300)
    (out / "work" / "planted").mkdir(parents=True)
    (out / "work" / "planted" / "secret.txt").write_text("another job's file")
    (out / "planted-secret.txt").write_text("the campaign's file")
    sock, port = _listener()
    targets = "".join(f'"{p}", ' for p in _targets(out, decoy))
    tree = base / "tree"
    sources = {"snoop": SNOOP.replace("TARGETS", targets).replace("PORT", str(port)),
               "incbin": INCBIN.replace("HIDDEN", str(ROOT / "problems" / "vec-scatter" / "checks.json"))}
    sources.update(agents)
    for agent, src in sources.items():
        _submission(tree, agent, src)
    cmd = [str(exe), "run", "--profile", "quick", "--agent", "reference", "--submissions", str(tree), "--problems",
           "vec-scatter", "--site", str(site_file), "--out", str(out), "--keep-work"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=base, env={**os.environ, **CANARIES},
                              timeout=1200)
    finally:
        sock.close()
    (base / "run.log").write_text(f"{proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    assert (out / "campaign.json").is_file(), proc.stderr[-3000:]
    return out


def _record(out: Path, agent: str) -> dict:
    return json.loads((out / "records" / f"{agent}__vec-scatter__1.json").read_text())


@pytest.fixture(scope="module")
def root_campaign() -> Path:
    if os.geteuid() != 0:
        pytest.skip("runs as root (cgroups per step, and `nobody` through setpriv)")
    # World-readable, not under pytest's private folder: `nobody` could read every planted
    # file here without the sandbox (checked), so the sandbox is what hides them.
    base = Path(tempfile.mkdtemp(prefix="sbx-"))
    os.chmod(base, 0o755)
    try:
        yield _campaign(base, {"daemon": DAEMON, "devzero": DEVZERO, "hog": HOG, "diskhog": DISKHOG})
    finally:
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(base.parent / f"{base.name}-other-campaign", ignore_errors=True)


NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]


def _as_nobody(out: Path, agent: str, sandboxed: bool = True, build: bool = False):
    """Run a job's step again as the unprivileged user `nobody`: bubblewrap then makes its
    namespaces without any privilege. Build: `make` in the job's build folder; run: the
    built program under mpiexec in its run folder."""
    from hpcbench.jobs.build import MAKEFILE_NAME
    from hpcbench.jobs.capture import Confinement, run_captured
    from hpcbench.jobs.launch import launch_argv, run_env
    from hpcbench.jobs.records import Isolation, Launcher, Limits
    from hpcbench.jobs.sandbox import Step
    from hpcbench.petsc_env import find_petsc

    work = out / "work" / f"{agent}__vec-scatter__1"
    petsc = find_petsc()
    # each run had folders of its own (jobs/run_folders.py): the first instrumented run's
    runs = sorted((work / "runs").glob("*-instrumented-*"), key=lambda p: int(p.name.split("-")[0]))
    run_dir, log_dir = (runs[0] / "run", runs[0] / "logs") if runs else (work / "run", work / "logs")
    for d in (work / "build", run_dir, log_dir):
        if not d.is_dir():
            continue  # a failed build leaves no run folder
        shutil.chown(d, "nobody")
        for f in d.rglob("*"):
            shutil.chown(f, "nobody")
    if build:
        step = Step(Isolation(), petsc, cwd=work / "build", writable=[work / "build"])
        argv = ["make", "-f", MAKEFILE_NAME, "app", f"PETSC_DIR={petsc.petsc_dir}", f"PETSC_ARCH={petsc.petsc_arch}"]
    else:
        step = Step(Isolation(), petsc, cwd=run_dir, writable=[run_dir, log_dir], readonly=[work / "build"])
        argv, _ = launch_argv(Launcher(), 3, 2, [str(work / "build" / "app")])
    cmd = NOBODY + (step.wrap(argv) if sandboxed else argv)
    # What a job does: the allow-listed environment built from ours, canaries included in ours.
    return run_captured(cmd, cwd=step.cwd, env=run_env(petsc.env(), Launcher()), timeout_s=120,
                        confinement=Confinement(Limits()))


def _snoop_output(out: Path) -> str:
    rec = _record(out, "snoop")
    assert rec["build"]["exit_code"] == 0, rec["build"]["stderr"][-2000:]
    assert rec["isolation"] == "bwrap" and all(r["isolation"] == "bwrap" for r in rec["runs"])
    stdout = rec["runs"][0]["stdout"]
    assert "DONE" in stdout and "READ main.c" in stdout, stdout[-2000:]  # the probe itself ran and works
    return stdout


def _assert_nothing_seen(out: Path) -> None:
    stdout = _snoop_output(out)
    leaks = [ln for ln in stdout.splitlines() if ln.startswith(("READ /", "WRITABLE /", "LEAK"))]
    assert not leaks, "\n".join(leaks)
    assert "NETWORK none" in stdout
    listed = {ln.rsplit("/", 1)[-1] for ln in stdout.splitlines() if ln.startswith("LIST ")}
    for name in ("records", "specs", "campaign.json", "submissions", "planted", "planted-secret.txt",
                 "reference__vec-scatter__1", "problems", "hpcbench", "site-configs"):
        assert name not in listed, f"{name} is visible walking up from the run folder"
    for key, value in CANARIES.items():
        assert value not in stdout and key not in stdout


def test_a_snooping_program_sees_no_file_of_the_campaign_no_answer_and_no_key(root_campaign):
    _assert_nothing_seen(root_campaign)
    # and the honest reference beside it still scores as it should
    ref = _record(root_campaign, "reference")
    assert all(r["exit_code"] == 0 for r in ref["runs"]), [r["stderr"][-500:] for r in ref["runs"]]


def _assert_nobody_sees_nothing(stdout: str) -> None:
    assert "DONE" in stdout and "READ main.c" in stdout, stdout[-2000:]
    leaks = [ln for ln in stdout.splitlines() if ln.startswith(("READ /", "WRITABLE /", "LEAK"))]
    assert not leaks, "\n".join(leaks)
    assert "NETWORK none" in stdout and not any(v in stdout for v in CANARIES.values())


def test_as_nobody_too_a_snooping_program_sees_nothing(root_campaign, monkeypatch):
    for k, v in CANARIES.items():
        monkeypatch.setenv(k, v)
    assert all(os.environ[k] == v for k, v in CANARIES.items())
    # Without the sandbox `nobody` reads the campaign's files: the probe is not vacuous.
    bare = _as_nobody(root_campaign, "snoop", sandboxed=False).stdout
    for readable in (root_campaign / "planted-secret.txt", ROOT / "problems" / "vec-scatter" / "checks.json",
                     root_campaign / "work" / "planted" / "secret.txt"):
        assert f"READ {readable}\n" in bare, bare[-3000:]
    _assert_nobody_sees_nothing(_as_nobody(root_campaign, "snoop").stdout)


def test_an_incbin_of_a_hidden_file_fails_the_build(root_campaign):
    rec = _record(root_campaign, "incbin")
    assert rec["build"]["exit_code"] != 0 and not rec["runs"]
    assert "checks.json" in rec["build"]["stderr"] and rec["build"]["isolation"] == "bwrap"
    # and as nobody (who could read checks.json outside the sandbox)
    assert os.access(ROOT / "problems" / "vec-scatter" / "checks.json", os.R_OK)
    cap = _as_nobody(root_campaign, "incbin", build=True)
    assert cap.exit_code != 0 and "checks.json" in cap.stderr, cap.stderr[-2000:]


def _daemons() -> list[str]:
    alive = []
    for comm in Path("/proc").glob("[0-9]*/comm"):
        try:
            if comm.read_text().strip() == DAEMON_NAME:
                alive.append(comm.parent.name)
        except OSError:
            continue
    return alive


def test_a_daemon_that_moves_itself_to_another_cgroup_does_not_survive_its_run(root_campaign):
    rec = _record(root_campaign, "daemon")
    assert rec["runs"] and "parent leaves" in rec["runs"][0]["stdout"]
    assert "ESCAPED" not in rec["runs"][0]["stdout"] and "could not write" in rec["runs"][0]["stdout"]
    assert not rec["runs"][0]["timed_out"]  # it ended when its program did, the daemon with it
    time.sleep(1)
    assert not _daemons(), f"daemon processes still alive: {_daemons()}"
    cap = _as_nobody(root_campaign, "daemon")
    assert "parent leaves" in cap.stdout and "ESCAPED" not in cap.stdout, cap.stdout + cap.stderr[-1000:]
    time.sleep(1)
    assert not _daemons(), f"daemon processes of nobody still alive: {_daemons()}"


def test_include_dev_zero_is_stopped_by_the_build_memory_limit_with_the_reason(root_campaign):
    build = _record(root_campaign, "devzero")["build"]
    assert build["exit_code"] != 0
    assert build["stopped_reason"] == "memory limit 4096 MB", build["stopped_reason"] + build["stderr"][-500:]


def test_four_processes_of_2_gb_are_stopped_at_the_jobs_memory_limit(root_campaign):
    run = _record(root_campaign, "hog")["runs"][0]
    assert run["exit_code"] != 0 and run["stopped_reason"].startswith("memory limit 4096 MB"), run


def test_writing_past_the_disk_limit_is_stopped_with_the_reason(root_campaign):
    run = _record(root_campaign, "diskhog")["runs"][0]
    assert run["stopped_reason"] == "disk limit 200 MB", run
    # watched, it is stopped before it is done; in a tmpfs of its limit (jobs/disk_cap.py) its writes
    # past the limit fail, and it may finish first (fwrite's errors unread) but held no more
    assert run["disk_limit"] == "kernel (tmpfs)" or "wrote 1 GB" not in run["stdout"], run


def test_work_folders_are_removed_after_the_record_unless_keep_work(root_campaign, tmp_path):
    # --keep-work above: the folders are there
    assert (root_campaign / "work" / "snoop__vec-scatter__1" / "build").is_dir()
    out = tmp_path / "c"
    tree = tmp_path / "tree"
    _submission(tree, "plain", "#include <stdio.h>\nint main(void) { puts(\"x\"); return 0; }\n")
    site_file = _site(tmp_path / "site.yaml")
    exe = Path(sys.executable).parent / "hpcbench"
    subprocess.run([str(exe), "run", "--profile", "quick", "--agent", "reference", "--submissions", str(tree),
                    "--problems", "vec-scatter", "--site", str(site_file), "--out", str(out)], check=True,
                   capture_output=True, cwd=tmp_path)
    for job in ("plain__vec-scatter__1", "reference__vec-scatter__1"):
        assert (out / "records" / f"{job}.json").is_file()
        assert not any((out / "work" / job / sub).exists() for sub in ("build", "runs", "run", "logs")), job
    assert "without isolation" not in (out / "report" / "report.md").read_text()


def test_a_campaign_run_without_isolation_is_reported_with_a_warning(tmp_path):
    tree = tmp_path / "tree"
    _submission(tree, "plain", "#include <stdio.h>\nint main(void) { puts(\"x\"); return 0; }\n")
    site_file = _site(tmp_path / "site.yaml")
    site_file.write_text(site_file.read_text().replace('"isolation": "bwrap"', '"isolation": "none"'))
    exe = Path(sys.executable).parent / "hpcbench"
    out = tmp_path / "c"
    args = [str(exe), "run", "--profile", "quick", "--agent", "reference", "--submissions", str(tree), "--problems",
            "vec-scatter", "--site", str(site_file), "--out", str(out)]
    # Agents' programs on an unisolated site: refused unless the user says otherwise (docs/sites.md).
    refused = subprocess.run(args, capture_output=True, text=True, cwd=tmp_path)
    assert refused.returncode == 2 and "--trust-submissions" in refused.stderr and not out.exists()
    subprocess.run([*args, "--trust-submissions"], check=True, capture_output=True, cwd=tmp_path)
    assert json.loads((out / "records" / "plain__vec-scatter__1.json").read_text())["isolation"] == "none"
    md = (out / "report" / "report.md").read_text()
    assert "Warning: 2 of 2 attempts were built or run without isolation (none)" in md, md[:2000]
    assert "without isolation" in (out / "report" / "report.html").read_text()
