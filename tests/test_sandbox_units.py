"""The sandbox's pieces without a campaign: the environment allow-list, the bwrap and
apptainer command lines, the step cgroup, the site field. The adversarial programs
through the whole pipeline are in test_sandbox_security.py."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from hpcbench.errors import ConfigError
from hpcbench.jobs.capture import Confinement, run_captured
from hpcbench.jobs.cgroup import StepCgroup
from hpcbench.jobs.launch import launch_argv, run_env
from hpcbench.jobs.records import Isolation, Launcher, Limits
from hpcbench.jobs.sandbox import Step, bwrap_sizes_tmpfs, bwrap_works, petsc_paths, step_env
from hpcbench.petsc_env import find_petsc
from hpcbench.site import load_site

ROOT = Path(__file__).resolve().parent.parent
KEYS = {"HPCBENCH_JUDGE_API_KEY": "c1", "OPENAI_API_KEY": "c2", "HPCBENCH_API_KEY": "c3",
        "SLURM_AUTH_TOKEN": "c4", "OMPI_SECRET_THING": "c5"}


def test_step_env_is_an_allow_list_and_never_passes_a_key():
    caller = {**KEYS, "PATH": "/opt/x/bin:/usr/bin", "OMPI_MCA_btl": "self", "SLURM_JOB_ID": "7",
              "PETSC_OPTIONS": "-ksp_type preonly", "AWS_PROFILE": "p", "PYTHONPATH": "/work", "HOME": "/root"}
    env = step_env({"PETSC_DIR": "/p"}, caller)
    assert env["PATH"] == "/opt/x/bin:/usr/bin" and env["OMPI_MCA_btl"] == "self" and env["SLURM_JOB_ID"] == "7"
    assert env["PETSC_DIR"] == "/p" and env["HOME"] == "/tmp"
    for gone in (*KEYS, "PETSC_OPTIONS", "AWS_PROFILE", "PYTHONPATH"):
        assert gone not in env, gone


def test_run_env_does_not_copy_the_callers_environment(monkeypatch):
    for k, v in KEYS.items():
        monkeypatch.setenv(k, v)
    env = run_env({"PETSC_DIR": "/p", "PETSC_ARCH": ""}, Launcher(env={"FI_PROVIDER": "tcp"}))
    assert not set(KEYS) & set(env) and env["FI_PROVIDER"] == "tcp"
    assert env["OMPI_MCA_rmaps_base_oversubscribe"] == "1"


def _step(tmp_path: Path, **iso) -> Step:
    petsc = find_petsc()
    (tmp_path / "run").mkdir()
    return Step(Isolation(**iso), petsc, cwd=tmp_path / "run", writable=[tmp_path / "run"],
                readonly=[tmp_path / "build"])


def test_bwrap_binds_petscs_prefix_alone_never_the_venv_or_the_package(tmp_path):
    step = _step(tmp_path)
    argv = step.wrap(["mpiexec", "-n", "2", "./app"])
    assert argv[-4:] == ["mpiexec", "-n", "2", "./app"] and "--unshare-all" in argv
    assert "--die-with-parent" in argv and ["--cap-drop", "ALL"] == argv[argv.index("--cap-drop"):][:2]
    bound = [argv[i + 1] for i, a in enumerate(argv) if a in ("--bind", "--ro-bind")]
    petsc = str(find_petsc().petsc_dir)
    assert petsc in bound and str(tmp_path / "run") in bound
    for p in bound:  # nothing above PETSc (the venv, site-packages) and nothing of hpcbench
        assert not (petsc.startswith(p + "/") and p not in ("/usr",)), p
        assert not Path(p).is_relative_to(ROOT / "hpcbench") and not Path(p).is_relative_to(ROOT / "problems")
    assert "/etc" not in bound and "/etc/passwd" in bound and "/sys" in bound
    assert argv[argv.index("--chdir") + 1] == str(tmp_path / "run")


def test_per_rank_keeps_the_launcher_outside_and_wraps_each_rank(tmp_path):
    step = _step(tmp_path, per_rank=True)
    step.scratch = tmp_path / "tmp"
    argv, _ = launch_argv(Launcher(template="srun --mpi=pmix -n {ranks}"), 4, 2, ["./app", "-x"], step)
    assert argv[:4] == ["srun", "--mpi=pmix", "-n", "4"] and Path(argv[5]).name == "bwrap"
    assert "--unshare-all" not in argv and "--unshare-ipc" in argv and "--unshare-net" not in argv
    assert "--unshare-pid" not in argv  # Open MPI's shared memory tells ranks apart by pid
    assert step.rank_env()["OMPI_MCA_btl_vader_single_copy_mechanism"] == "none"
    assert argv[-2:] == ["./app", "-x"] and ["--bind", str(step.scratch), "/dev/shm"] == \
        argv[argv.index("/dev/shm") - 2:argv.index("/dev/shm") + 1]


def test_apptainer_command_shape(tmp_path):
    """Apptainer cannot be installed on this test machine (no package in Debian's archive):
    the command is generated and its shape checked; sites run it for real."""
    step = _step(tmp_path, level="apptainer", image="/images/petsc.sif")
    argv = step.wrap(["mpiexec", "-n", "2", "./app"])
    assert Path(argv[0]).name == "apptainer" and argv[1] == "exec" and "--containall" in argv
    assert "--no-home" in argv and argv[argv.index("--network") + 1] == "none"
    assert f"{tmp_path / 'run'}:{tmp_path / 'run'}" in argv
    assert f"{find_petsc().petsc_dir}:{find_petsc().petsc_dir}:ro" in argv
    assert argv[argv.index("--pwd") + 1] == str(tmp_path / "run")
    assert argv[-5:] == ["/images/petsc.sif", "mpiexec", "-n", "2", "./app"]
    (tmp_path / "x").mkdir()
    with pytest.raises(ValueError, match="image"):
        _step(tmp_path / "x", level="apptainer").wrap(["true"])
    (tmp_path / "y").mkdir()
    ranks = _step(tmp_path / "y", level="apptainer", image="/i.sif", per_rank=True).wrap(["./app"])
    assert "--containall" not in ranks and "--contain" in ranks and "--network" not in ranks


def test_every_bundled_site_states_its_isolation_and_apptainer_needs_an_image(tmp_path):
    for f in (ROOT / "site-configs").glob("*.yaml"):
        assert "\nisolation: " in f.read_text(), f"{f.name} must say its isolation explicitly"
    assert load_site("local").isolation == "bwrap" and load_site("ci-slurm").sandbox().per_rank
    bad = tmp_path / "s.yaml"
    bad.write_text("name: s\nisolation: apptainer\n")
    with pytest.raises(ConfigError, match="isolation_image"):
        load_site(str(bad))
    bad.write_text("name: s\nisolation: chroot\n")
    with pytest.raises(ConfigError, match="isolation"):
        load_site(str(bad))


def test_petsc_paths_are_inside_petsc_or_outside_usr():
    petsc = find_petsc()
    for p in petsc_paths(petsc):
        assert p.is_relative_to(petsc.petsc_dir) or not p.is_relative_to("/usr"), p


needs_bwrap = pytest.mark.skipif(not bwrap_works()[0], reason=f"bubblewrap unusable here: {bwrap_works()[1]}")


def test_a_petsc_under_usr_is_not_bound_twice(tmp_path):
    """Debian's petsc-dev is /usr/lib/petsc -> /etc/alternatives/petsc -> petscdir/petsc3.18/...:
    binding it again over the /usr already bound made bwrap fail before any step started (every
    build of a campaign against PETSc 3.18). What /usr shows is not bound again; any folder under
    /usr stands for it (a link among Debian's doc folders, where there is one, the harder case)."""
    docs = sorted(Path("/usr/share/doc").iterdir())
    under_usr = next((p for p in docs if p.is_symlink() and p.is_dir()), Path("/usr/share"))
    step = _step(tmp_path)
    step.readonly += [under_usr, tmp_path / "run"]
    argv = step.wrap(["true"])
    bound = [argv[i + 1] for i, a in enumerate(argv) if a == "--ro-bind"]
    assert "/usr" in bound and str(under_usr) not in bound and str(tmp_path / "run") in bound


@needs_bwrap
def test_a_step_sees_its_folder_and_not_its_parent(tmp_path):
    (tmp_path / "secret").write_text("x")
    step = _step(tmp_path)
    (step.cwd / "mine").write_text("y\n")
    cap = run_captured(["sh", "-c", f"cat mine; cat {tmp_path}/secret; ls {tmp_path}"], cwd=step.cwd,
                       env=step_env({}), timeout_s=30, step=step,
                       confinement=Confinement(Limits()))
    assert cap.stdout.startswith("y") and "secret" in cap.stderr and "No such file" in cap.stderr
    assert cap.stdout.split()[1:] == ["run"]  # only the mount point of its own folder


@needs_bwrap
def test_disk_limit_stops_a_writer_and_says_so(tmp_path):
    step = _step(tmp_path)
    script = "import os\nfor i in range(200):\n    open(f'f{i}', 'wb').write(os.urandom(1 << 20))\nprint('all')"
    cap = run_captured(["/usr/bin/python3", "-c", script], cwd=step.cwd, env=step_env({}), timeout_s=60,
                       step=step, confinement=Confinement(Limits(disk_mb=20)))
    assert cap.stopped_reason == "disk limit 20 MB" and "all" not in cap.stdout


@needs_bwrap
def test_a_writer_that_ignores_sigxfsz_is_stopped_at_the_file_size_limit_in_words(tmp_path):
    """Before: the write failed with EFBIG, the program exited 1, and the stop reason was empty."""
    step = _step(tmp_path)
    script = ("import os, signal, sys\nsignal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
              "try:\n    open('big', 'wb').write(bytes(8 << 20))\nexcept OSError as e:\n    sys.exit(f'{e}')")
    cap = run_captured(["/usr/bin/python3", "-c", script], cwd=step.cwd, env=step_env({}), timeout_s=60,
                       step=step, confinement=Confinement(Limits(file_size_mb=4, disk_mb=20)))
    assert cap.exit_code == 1 and "File too large" in cap.stderr
    assert cap.stopped_reason == "file size limit 4 MB (big reached it)", cap.stopped_reason


@needs_bwrap
def test_a_step_past_its_disk_limit_has_its_files_removed_at_once(tmp_path):
    step = _step(tmp_path)
    script = ("import os, time\nos.makedirs('a/b')\nfor i in range(15):\n"
              "    with open(f'a/b/f{i}', 'wb') as f: os.posix_fallocate(f.fileno(), 0, 1 << 20)\n"
              "os.chmod('a/b', 0)\nos.chmod('a', 0o500)\n"  # folders it cannot be cleaned out of by mode
              "with open('c', 'wb') as f: os.posix_fallocate(f.fileno(), 0, 10 << 20)\ntime.sleep(5)")
    cap = run_captured(["/usr/bin/python3", "-c", script], cwd=step.cwd, env=step_env({}), timeout_s=60,
                       step=step, confinement=Confinement(Limits(disk_mb=20)))
    assert cap.stopped_reason == "disk limit 20 MB" and cap.wall_s < 4
    assert step.cwd.is_dir() and list(step.cwd.iterdir()) == []


needs_sized_tmpfs = pytest.mark.skipif(not bwrap_sizes_tmpfs(), reason="this bwrap has no --size (0.5+)")
# A step that fills its folder, a folder and a sparse file of its own under the limit, its
# harness-made file (`logs/held`) written, a new file beside it refused; then one fallocate of
# more than its limit: the kernel refuses it whole, where the 0.2 s watch let it through.
FILLS = ("import os\nos.mkdir('d'); open('d/mine', 'w').write('kept')\n"
         "with open('sparse', 'wb') as f: f.seek(8 << 20); f.write(b'x')\n"
         "open('../logs/held', 'w').write('record')\n"
         "try:\n    open('../logs/new', 'w')\nexcept OSError as e:\n    print('refused:', e.strerror)\n"
         "with open('big', 'wb') as f:\n    os.posix_fallocate(f.fileno(), 0, 100 << 20)\n")


def _two_folders(tmp_path: Path) -> Step:
    step = _step(tmp_path)
    step.writable.append(tmp_path / "logs")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "held").touch()
    (step.cwd / "src.c").write_text("staged")
    return step


@needs_bwrap
@needs_sized_tmpfs
@pytest.mark.parametrize("launch", [(), ("env",)], ids=["harness-copies-out", "sandbox-copies-back"])
def test_the_kernel_refuses_a_fallocate_past_the_disk_limit_and_the_files_under_it_come_out(tmp_path, launch):
    """Started by us the harness copies the tmpfs out once the step is gone; through a launcher
    (a build under Slurm: `env` stands for srun) the sandbox copies it back itself."""
    step = _two_folders(tmp_path)
    cap = run_captured(["/usr/bin/python3", "-c", FILLS.replace("'big'", "'big' if False else 'ok'")
                        .replace("100 << 20", "1 << 20")], cwd=step.cwd, env=step_env({}), timeout_s=60,
                       step=step, confinement=Confinement(Limits(disk_mb=20), launch=launch))
    assert cap.exit_code == 0 and cap.disk_limit == "kernel (tmpfs)", (cap.stopped_reason, cap.stderr)
    assert "refused: Read-only file system" in cap.stdout and (tmp_path / "logs" / "held").read_text() == "record"
    assert (step.cwd / "d" / "mine").read_text() == "kept" and (step.cwd / "src.c").read_text() == "staged"
    assert (step.cwd / "ok").stat().st_size == 1 << 20
    sparse = (step.cwd / "sparse").stat()
    assert sparse.st_size == (8 << 20) + 1 and sparse.st_blocks * 512 < 1 << 20  # holes kept
    assert not (tmp_path / "logs" / "new").exists()

    (tmp_path / "bomb").mkdir()
    bomb = _two_folders(tmp_path / "bomb")
    cap = run_captured(["/usr/bin/python3", "-c", FILLS], cwd=bomb.cwd, env=step_env({}), timeout_s=60,
                       step=bomb, confinement=Confinement(Limits(disk_mb=20), launch=launch))
    assert "No space left on device" in cap.stderr and cap.stopped_reason == "disk limit 20 MB", cap.stderr
    assert list(bomb.cwd.iterdir()) == []  # a step past its limit leaves nothing


@needs_bwrap
@needs_sized_tmpfs
def test_a_capped_step_past_its_inode_limit_is_stopped_as_before(tmp_path):
    step = _step(tmp_path)
    script = "import os, time\nfor i in range(3000): open(f'e{i}', 'w')\ntime.sleep(5)"
    cap = run_captured(["/usr/bin/python3", "-c", script], cwd=step.cwd, env=step_env({}), timeout_s=60,
                       step=step, confinement=Confinement(Limits(disk_mb=20, inodes=1000)))
    assert cap.stopped_reason == "inode limit 1000" and cap.wall_s < 4 and cap.disk_limit == "kernel (tmpfs)"


@pytest.mark.skipif(os.geteuid() != 0, reason="creating cgroups needs root here")
def test_step_cgroup_limits_memory_of_all_processes_together(tmp_path):
    cg = StepCgroup.create(32, 256)
    if cg is None or not cg.limits_memory:
        pytest.skip("no memory cgroup can be made on this machine")
    cg.remove()
    # two processes of 200 MB each: each under 256 MB, together over it
    hog = ("import os, time\nos.fork()\nb = bytearray(200 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\n"
           "time.sleep(2)\nprint('survived')")
    cap = run_captured([sys.executable, "-c", hog], cwd=tmp_path, env=dict(os.environ), timeout_s=60,
                       confinement=Confinement(Limits(memory_mb=256)))
    assert cap.stopped_reason == "memory limit 256 MB", (cap.stopped_reason, cap.stdout, cap.stderr[-500:])


@needs_bwrap
def test_doctor_shows_the_isolation_level_and_that_it_starts():
    exe = Path(sys.executable).parent / "hpcbench"
    import subprocess

    out = subprocess.run([str(exe), "doctor", "--no-launch"], capture_output=True, text=True).stdout
    line = next(ln for ln in out.splitlines() if ln.startswith("isolation:"))
    assert "bwrap" in line and " ok " in line and "one sandbox per step" in line, line
    assert ("disk limit: kernel (a tmpfs of disk_mb" if bwrap_sizes_tmpfs() else "disk limit: watched") in line, line
    out = subprocess.run([str(exe), "doctor", "--site", "polaris", "--no-launch"], capture_output=True,
                         text=True).stdout
    assert any(ln.startswith("isolation: none") and "WARNING" in ln for ln in out.splitlines()), out


def test_a_group_of_only_zombies_is_not_waited_for_but_a_live_member_is():
    """srun's helper outlives srun as a zombie where PID 1 is slow to reap; kill_group used to
    wait its whole grace for it, holding the run's core slots idle (0.5 s of every packed run)."""
    import subprocess
    import time

    from hpcbench.jobs.capture import group_alive, kill_group

    dead = subprocess.Popen(["true"], start_new_session=True)  # never waited: a zombie leader
    while Path(f"/proc/{dead.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
        time.sleep(0.01)
    os.killpg(dead.pid, 0)  # the group still answers signals...
    assert not group_alive(dead.pid)  # ...but nothing of it runs
    live = subprocess.Popen(["sleep", "30"], start_new_session=True)
    assert group_alive(live.pid)
    kill_group(live.pid)
    assert live.wait(timeout=5) == -15  # SIGTERM within the grace
    dead.wait()
    assert not group_alive(live.pid)
