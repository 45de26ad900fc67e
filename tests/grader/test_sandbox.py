"""The sandbox every student build and run goes through (grading/judge/runner_sandbox.py): one
test per thing a student's process must not do, each run through bubblewrap as the grader runs it.
Skips (visibly) where bubblewrap cannot start a sandbox; CI installs it."""

import os
import shutil
import stat
import subprocess
import sys
import time

import pytest

from judge import runner_run, runner_sandbox
from judge.rubric import Case

try:
    BOX = runner_sandbox.probe()
except runner_sandbox.SandboxError as e:
    BOX = None
    WHY = str(e)
pytestmark = pytest.mark.skipif(BOX is None, reason="bubblewrap cannot start a sandbox here")


def step(argv, tmp_path, ro=(), rw=(), limits=None, env=None, timeout=60):
    for d in rw:
        runner_sandbox.open_for_step(str(d))
    cmd = BOX.command(
        argv,
        ro=[str(p) for p in ro],
        rw=[str(p) for p in rw],
        cwd=str(rw[0]) if rw else "/",
        env=BOX.step_env(env if env is not None else dict(os.environ)),
        limits=limits,
    )
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def test_the_grader_secret_and_environment_never_reach_a_step(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_GRADING_SECRET", "s3cr3t-value")
    monkeypatch.setenv("INSTRUCTOR_TOKEN", "tok-123")
    p = step(["/usr/bin/env"], tmp_path)
    assert p.returncode == 0, p.stderr
    assert "s3cr3t-value" not in p.stdout and "tok-123" not in p.stdout
    env = dict(line.split("=", 1) for line in p.stdout.split("\n") if "=" in line)
    fixed = {"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "PWD", "LD_LIBRARY_PATH"}
    assert set(env) <= set(runner_sandbox.PASS_THROUGH) | fixed
    # the toolchain's library folders pass only where every step sees them (a CUDA machine sets them)
    assert all(BOX.visible(d) for d in env.get("LD_LIBRARY_PATH", "").split(":") if d)


def test_a_step_sees_nothing_of_the_grader_but_what_it_is_given(tmp_path):
    secret = tmp_path / "instructor" / "solution.cu"
    secret.parent.mkdir()
    secret.write_text("the solution\n")
    given = tmp_path / "given"
    given.mkdir()
    (given / "mine.txt").write_text("the student's tree\n")
    p = step(["/bin/sh", "-c", f"cat {secret}; cat {given}/mine.txt; ls /root /home /work 2>&1"], tmp_path, ro=[given])
    assert "the solution" not in p.stdout
    assert "the student's tree" in p.stdout
    assert "No such file" in p.stdout or "cannot access" in p.stdout


def sandboxed_run(driver, tmp_path):
    """A case of `driver` (a fake driver script) as the grader runs it, in the sandbox."""
    return runner_run.RunSpec(
        driver=str(driver),
        version="v",
        args=[],
        workdir=str(tmp_path / "runs"),
        name="x.v.0",
        time_limit_s=20,
        memory_limit_gb=4,
        output_limit_kb=64,
        env=dict(os.environ),
        sandbox=BOX,
    )


def test_a_gpu_step_has_a_private_writable_dev_shm(tmp_path):
    # ncu shares memory with the program it profiles there: a dropped uid must be able to write it,
    # and nothing written there outlives the step or reaches the next one
    def shm(gpu):
        cmd = BOX.command(["/bin/sh", "-c", "echo x > /dev/shm/mine && ls /dev/shm"], env=BOX.step_env({}), gpu=gpu)
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60)

    first = shm(True)
    assert first.returncode == 0 and first.stdout.split() == ["mine"], first.stderr
    again = shm(True)
    assert again.stdout.split() == ["mine"]  # a fresh, empty one: only this step's file


def test_the_steps_ram_folders_hold_at_most_the_largest_file_a_step_may_write(tmp_path):
    # what a step writes to /tmp or /dev/shm is memory no process's resident size counts: each is
    # sized to Limits.file_mb where bubblewrap can size a tmpfs
    if not runner_sandbox.bwrap_sizes_tmpfs(BOX.bwrap):
        pytest.skip("this bubblewrap cannot size a tmpfs (--size: 0.8 and later)")
    lim = runner_sandbox.Limits(file_mb=8)
    script = "df -k /tmp /dev/shm | tail -n 2"
    cmd = BOX.command(["/bin/sh", "-c", script], env=BOX.step_env({}), gpu=True, limits=lim)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    sizes = [int(line.split()[1]) for line in p.stdout.splitlines()]
    assert sizes == [8 * 1024, 8 * 1024], p.stdout + p.stderr


def test_read_only_paths_cannot_be_written_and_the_step_folder_can(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "harness.cpp").write_text("int harness;\n")
    run = tmp_path / "run"
    p = step(
        ["/bin/sh", "-c", f"echo x >> {tree}/harness.cpp; echo rc=$?; echo out > {run}/mine.csv"],
        tmp_path,
        ro=[tree],
        rw=[run],
    )
    assert (tree / "harness.cpp").read_text() == "int harness;\n"
    assert "rc=0" not in p.stdout
    assert (run / "mine.csv").read_text() == "out\n"


def test_no_process_of_a_step_outlives_it(tmp_path):
    marker = tmp_path / "run" / "late"
    run = tmp_path / "run"
    # a setsid child that would write after the step ended, and one that would keep burning CPU
    script = f"setsid sh -c 'sleep 2; echo late > {marker}' & setsid sh -c 'while :; do :; done' & exit 0"
    t0 = time.time()
    p = step(["/bin/sh", "-c", script], tmp_path, rw=[run])
    assert p.returncode == 0 and time.time() - t0 < 10
    time.sleep(3)
    assert not marker.exists()
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert "while :; do :; done" not in ps


def test_a_fork_bomb_stops_at_the_process_limit(tmp_path):
    lim = runner_sandbox.Limits(processes=64)
    t0 = time.time()
    p = step(
        ["/bin/sh", "-c", "n=0; while [ $n -lt 400 ]; do sleep 3 & n=$((n+1)); done 2>/dev/null; echo started $n"],
        tmp_path,
        limits=lim,
        timeout=120,
    )
    assert time.time() - t0 < 60
    assert "fork" in p.stderr.lower() or "resource" in p.stderr.lower() or p.returncode != 0, p


def test_file_size_and_cpu_time_are_limited(tmp_path):
    run = tmp_path / "run"
    p = step(
        ["/bin/sh", "-c", f"head -c 3000000 /dev/zero > {run}/big; echo rc=$?"],
        tmp_path,
        rw=[run],
        limits=runner_sandbox.Limits(file_mb=1),
    )
    assert (run / "big").stat().st_size <= 2**20
    t0 = time.time()
    p = step(["/bin/sh", "-c", "while :; do :; done"], tmp_path, limits=runner_sandbox.Limits(cpu_s=1), timeout=60)
    assert p.returncode != 0 and time.time() - t0 < 30


def test_a_step_has_no_network(tmp_path):
    code = (
        "import socket\ntry:\n socket.create_connection(('1.1.1.1', 53), 2)\n print('connected')\n"
        "except OSError as e:\n print('refused', e)"
    )
    p = step([sys.executable, "-c", code], tmp_path)
    assert "connected" not in p.stdout


def test_a_compile_address_space_is_limited(tmp_path):
    code = "b = bytearray(3 * 2**30)\nprint('allocated')"
    p = step([sys.executable, "-c", code], tmp_path, limits=runner_sandbox.Limits(address_space_gb=1))
    assert "allocated" not in p.stdout and p.returncode != 0


def test_a_driver_run_is_sandboxed_end_to_end(tmp_path, monkeypatch):
    """runner_run.execute with the sandbox: a hostile 'driver' that reads the environment and the
    grader's files, forks a survivor and writes its CSV: only the CSV comes back."""
    monkeypatch.setenv("COURSE_GRADING_SECRET", "s3cr3t-value")
    grader_file = tmp_path / "grader_state.json"
    grader_file.write_text('{"cache": 1}')
    driver = tmp_path / "bin" / "driver"
    driver.parent.mkdir()
    csv = (
        "subproject,kind,version,role,idea,n,params,median_ms,min_ms,max_ms,noise,samples,metric,metric_unit,"
        "pct_of_ceiling,ceiling,speedup_vs_cpu,speedup_vs_prev,speedup_vs_library,predicted_ms,metrics,status,"
        "detail,device,cuda,git_sha"
    )
    driver.write_text(
        "#!/bin/sh\n"
        'out=""; while [ $# -gt 0 ]; do [ "$1" = --csv ] && out=$2; shift; done\n'
        "env; cat " + str(grader_file) + " 2>&1\n"
        "echo tampered >> " + str(grader_file) + " 2>&1\n"
        f"setsid sh -c 'sleep 2; echo late >> {grader_file}' &\n"
        f"printf '%s\\n' '{csv}' > \"$out\"\n"
        "echo 'x,version,v,version,idea,5,,1,1,1,0,1,,,,,,,,,,pass,,cpu,13.0,abc' >> \"$out\"\n"
    )
    driver.chmod(driver.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    spec = sandboxed_run(driver, tmp_path)
    raw = runner_run.execute(spec)
    with open(raw.log) as fh:
        log = fh.read()
    assert "s3cr3t-value" not in log and '{"cache": 1}' not in log
    time.sleep(3)
    assert grader_file.read_text() == '{"cache": 1}'
    res = runner_run.judge(raw, "v", Case(name="visible", args=[], hidden=False), spec)
    assert res.status.value == "correct", (res.detail, log)


def test_the_compilers_work_in_a_step(tmp_path):
    """c++ (through /etc/alternatives) and nvcc (temporary files in the private /tmp) compile a
    student's file from a read-only tree into the step's writable folder."""
    tree, out = tmp_path / "tree", tmp_path / "obj"
    tree.mkdir()
    (tree / "a.cpp").write_text("int twice(int x) { return 2 * x; }\n")
    (tree / "k.cu").write_text("__global__ void k(int* p) { p[threadIdx.x] = 1; }\n")
    compilers = [["c++", "-c", str(tree / "a.cpp"), "-o", str(out / "a.o")]]
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if os.path.exists(nvcc):
        compilers.append([nvcc, "-c", str(tree / "k.cu"), "-o", str(out / "k.o")])
    for cmd in compilers:
        p = step(cmd, tmp_path, ro=[tree], rw=[out], timeout=300)
        assert p.returncode == 0, p.stderr
        assert (out / os.path.basename(cmd[-1])).stat().st_size > 0


def test_timed_runs_and_builds_never_share_a_core():
    plan = runner_sandbox.core_plan(2, list(range(16)))
    runs, builds = plan[:-1], plan[-1]
    sets = [set(p.split(",")) for p in runs]
    assert sets[0].isdisjoint(sets[1])
    assert all(s.isdisjoint(set(builds.split(","))) for s in sets)
    assert len(runner_sandbox.core_plan(8, list(range(128)))) == 9


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one core: nothing to pin apart")
def test_a_step_is_pinned_to_its_cores(tmp_path):
    core = str(sorted(os.sched_getaffinity(0))[-1])
    cmd = BOX.command(["/bin/grep", "Cpus_allowed_list", "/proc/self/status"], env=BOX.step_env({}), cpus=core)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert p.stdout.split()[-1] == core, p


def test_a_native_architecture_is_spelled_out_for_a_confined_compile():
    """CMake passes -arch=native for CMAKE_CUDA_ARCHITECTURES=native; nvcc asks the GPU, which a
    compile step cannot see: the grader spells out this machine's architectures instead (else the
    student's objects are built for nvcc's default, other code than the instructor's)."""
    from judge import runner_build

    cmd = ["nvcc", "-O3", "-arch=native", "-c", "a.cu", "-o", "a.o"]
    got = runner_build.resolve_native(cmd, ["90", "86"])
    assert "-arch=native" not in got
    assert got[2:4] == [
        "--generate-code=arch=compute_90,code=[compute_90,sm_90]",
        "--generate-code=arch=compute_86,code=[compute_86,sm_86]",
    ]
    assert runner_build.resolve_native(["nvcc", "-arch", "native", "x.cu"], ["75"]) == [
        "nvcc",
        "--generate-code=arch=compute_75,code=[compute_75,sm_75]",
        "x.cu",
    ]
    assert runner_build.resolve_native(cmd, []) == cmd  # no GPU to ask: as the instructor's build


def test_the_compiler_environment_reaches_compiles_and_nothing_else(monkeypatch):
    env = {"NVCC_APPEND_FLAGS": "-lineinfo", "CPATH": "/usr/include:/home/instructor/secret", "OTHER": "x"}
    got = BOX.compiler_env(env)
    assert got["NVCC_APPEND_FLAGS"] == "-lineinfo"
    assert got["CPATH"] == "/usr/include"
    assert "OTHER" not in got


def test_a_read_only_path_under_a_system_folder_is_given_as_it_is_there(tmp_path):
    # compute-sanitizer, a step's wrapper, sits at /usr/local/cuda/bin/... where /usr/local/cuda is a
    # symlink: bound a second time, bubblewrap cannot make its parents and the step never starts
    link = next((p for p in ("/usr/local/cuda", "/usr/lib/cuda") if os.path.islink(p)), None)
    tool = next(
        (
            os.path.join(link, "bin", t)
            for t in ("nvcc", "cuobjdump")
            if link and os.path.exists(os.path.join(link, "bin", t))
        ),
        None,
    )
    if tool is None:
        pytest.skip("no symlinked toolkit folder under /usr here")
    p = step([tool, "--version"], tmp_path, ro=[tool])
    assert p.returncode == 0, p.stderr
    assert "Can't mkdir" not in p.stderr


def test_a_link_planted_at_the_log_path_is_not_followed(tmp_path):
    # the step's folder is the student's: a link at the name the grader writes the run's log to
    # would have the grader (root, in a class's job) write the student's output anywhere
    victim = tmp_path / "victim"
    victim.write_text("the grader's file\n")
    driver = tmp_path / "driver.sh"
    driver.write_text(f"#!/bin/sh\nln -sf {victim} x.v.0.log\necho 'ssh-ed25519 AAAA student'\n")
    driver.chmod(0o755)
    spec = sandboxed_run(driver, tmp_path)
    raw = runner_run.execute(spec)
    assert victim.read_text() == "the grader's file\n"
    assert not os.path.islink(raw.log)
    with open(raw.log) as fh:
        assert "student" in fh.read()


def test_two_grading_jobs_on_one_instructor_tree_take_turns_preparing_it(tmp_path, monkeypatch):
    """A class and its hanging student graded beside it prepare the same tree: the second job waits
    for the first's configure and build (which it then finds done) instead of configuring it too."""
    import fcntl
    import threading

    from judge import runner_build

    calls = []
    monkeypatch.setattr(runner_build, "_prepare_locked", lambda *a: calls.append(a[1]) or "plan")
    build = tmp_path / "build"
    build.mkdir()
    with open(build / ".grader_prepare.lock", "a") as held:  # the first job, mid-configure
        fcntl.flock(held, fcntl.LOCK_EX)
        got = []
        t = threading.Thread(target=lambda: got.append(runner_build.prepare(str(tmp_path), str(build), [])))
        t.start()
        t.join(0.5)
        assert t.is_alive() and not calls  # waits while the tree is being prepared
    t.join(10)
    assert got == ["plan"] and calls == [str(build)]
