"""The sandbox every student build and run goes through: bubblewrap (Debian's `bubblewrap`).

A step runs in its own user, PID, mount, IPC, UTS, cgroup and network namespaces, sees a read-only
view of only what it needs (the system's libraries and compilers, the CUDA toolkit, the paths the
step names: the student's clean tree and objects, the driver, the kernel recorder) plus one
writable folder (the step's own), a private /tmp, a minimal /dev with the NVIDIA device nodes
and a private /dev/shm when it uses the GPU, and an environment built from an allow-list: nothing of the grader's own
environment (COURSE_GRADING_SECRET above all) reaches it. Resource limits (CPU time, file size,
open files, processes, address space for compiles) are set with prlimit before bubblewrap starts;
when the grader runs as root, bubblewrap makes the namespaces (no user namespace needed) and the
step itself runs as an unprivileged uid of its own, without capabilities (setpriv), so the process
limit counts and nothing of root's remains. Every process of a step ends with it: the step's PID namespace dies with
its first process (a `setsid` child included), and bubblewrap dies with the grader.

Without bubblewrap the grader refuses to grade unless the instructor passes --unsafe-no-sandbox;
every report then says so (Sandbox.describe)."""

from __future__ import annotations

import functools
import glob
import os
import shutil
import subprocess
import threading
from dataclasses import dataclass, field

# The environment a sandboxed step gets: these names, with values the grader sets (never copied
# from its own environment except where listed in PASS_THROUGH).
PASS_THROUGH = ("CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS", "CUDA_MODULE_LOADING", "COURSE_CEILINGS", "COURSE_NCU")
# What the instructor's build saw of the compiler's environment: a student's compile sees the same
# (these steer nvcc and g++, they hold no secret; a path in them the step cannot see is dropped)
COMPILER_ENV = ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "CPATH", "LIBRARY_PATH", "CPLUS_INCLUDE_PATH")
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt/cuda")
ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives", "/etc/localtime")
GPU_NODES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset", "/dev/nvidia-caps")
UNSAFE_NOTE = (
    "UNSAFE: graded without the sandbox (--unsafe-no-sandbox): the student's code ran as the grader, "
    "with its files and environment"
)


class SandboxError(Exception):
    pass


@dataclass
class Limits:
    """Per-step resource limits (0: none)."""

    cpu_s: int = 0  # RLIMIT_CPU of every process
    file_mb: int = 1024  # RLIMIT_FSIZE: the largest file a step may write
    open_files: int = 4096
    processes: int = 512  # RLIMIT_NPROC of the step's uid (threads count)
    address_space_gb: float = 0  # RLIMIT_AS: for compiles (CUDA programs reserve far more address space)


@dataclass
class Sandbox:
    """How steps are confined: mode "bwrap" or "unsafe" (no confinement, named in every report)."""

    mode: str = "bwrap"
    bwrap: str = ""
    version: str = ""
    drop_uid: bool = False  # the grader is root: steps run as an unprivileged uid of their own
    uid_base: int = 61000
    extra_ro: list = field(default_factory=list)  # more read-only paths every step sees (the toolkit)
    build_cpus: str = ""  # the cores compiles and links are pinned to (core_plan's last entry)
    extra_bin: list = field(default_factory=list)  # the instructor build's compilers' folders, on PATH
    _slots: dict = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def safe(self) -> bool:
        return self.mode == "bwrap"

    def describe(self) -> str:
        if not self.safe:
            return UNSAFE_NOTE
        who = "an unprivileged uid per worker" if self.drop_uid else "the grader's uid"
        return f"bubblewrap {self.version} (namespaces: user, pid, mount, ipc, uts, cgroup, net; {who})"

    def compiler_env(self, base: dict[str, str]) -> dict[str, str]:
        """The compiler-steering variables of `base` (COMPILER_ENV), for compile and link steps:
        flags as they are, search paths only where the step can see them."""
        out = {}
        for k in COMPILER_ENV:
            if k not in base:
                continue
            if k.endswith("FLAGS"):
                out[k] = base[k]
            else:
                dirs = [d for d in base[k].split(":") if d and self.visible(d)]
                if dirs:
                    out[k] = ":".join(dirs)
        return out

    def visible(self, path: str) -> bool:
        """Whether every step sees `path` (under the system's folders or the toolchain's)."""
        return under(path, system_paths() + list(self.extra_ro))

    def uid(self) -> int:
        """A uid per grading thread: concurrent students never share a process limit."""
        with self._lock:
            return self.uid_base + self._slots.setdefault(threading.get_ident(), len(self._slots))

    def command(
        self,
        argv: list[str],
        *,
        ro: list[str] = (),
        rw: list[str] = (),
        cwd: str = "/",
        env: dict[str, str] | None = None,
        gpu: bool = False,
        limits: Limits | None = None,
        cpus: str = "",
    ) -> list[str]:
        """argv wrapped in the sandbox: `ro` paths visible read-only, `rw` writable, both at their
        own paths; `env` is the whole environment of the step (allow-listed by the caller)."""
        pin = ["taskset", "-c", cpus] if cpus and shutil.which("taskset") else []
        if not self.safe:
            return pin + list(argv)
        lim = limits or Limits()
        if self.drop_uid:  # root: namespaces without a user one, then an unprivileged uid inside
            cmd = pin + [self.bwrap, "--unshare-pid", "--unshare-ipc", "--unshare-net", "--unshare-uts"]
            cmd += ["--unshare-cgroup-try"]
        else:  # an unprivileged bubblewrap: a user namespace, the grader's uid mapped
            cmd = pin + self._limits(lim) + [self.bwrap, "--unshare-all"]
        cmd += ["--die-with-parent", "--new-session", "--clearenv"]
        # the step's RAM-backed folders hold at most file_mb each where bubblewrap can size them: what
        # is written there is memory no process's resident size counts, so unsized (half the host's
        # RAM each) a step could fill the host's memory beside everyone's runs
        size = tmpfs_size_args(self.bwrap, lim.file_mb)
        cmd += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777"] + size + ["--tmpfs", "/tmp"]
        system = system_paths() + list(self.extra_ro)
        cmd += ancestors(system + list(ro) + list(rw))
        for p in system:
            cmd += bind_args("--ro-bind", p)
        # a path under a system folder is there already, read-only (a second bind would go through
        # that folder's symlinks, which bubblewrap cannot make parents under: /usr/local/cuda)
        real = [os.path.realpath(r) for r in system]
        for p in [p for p in ro if not (under(p, system) and under(os.path.realpath(p), real))]:
            cmd += bind_args("--ro-bind", p)
        for p in rw:
            cmd += bind_args("--bind", p)
        if gpu:
            for node in gpu_nodes():
                cmd += ["--dev-bind", node, node]
            # a private, writable /dev/shm (bubblewrap's is root's, read-only to a dropped uid): what the
            # GPU tools share memory through (ncu with the program it profiles, NCCL's shm transport)
            cmd += ["--perms", "1777"] + size + ["--tmpfs", "/dev/shm"]
        for k, v in sorted((env or {}).items()):
            cmd += ["--setenv", k, v]
        cmd += ["--chdir", cwd, "--"]
        if self.drop_uid:
            uid = str(self.uid())
            cmd += ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all"]
            cmd += ["--bounding-set=-all", "--"] + self._limits(lim)
        return cmd + list(argv)

    def _limits(self, lim: Limits) -> list[str]:
        # RLIMIT_NPROC counts every task of the uid: the grader's own uid has others already
        nproc = lim.processes if self.drop_uid else lim.processes + uid_tasks(os.getuid())
        out = ["prlimit", f"--nofile={lim.open_files}", "--core=0", f"--nproc={nproc}"]
        if lim.cpu_s:
            out.append(f"--cpu={int(lim.cpu_s)}")
        if lim.file_mb:
            out.append(f"--fsize={int(lim.file_mb) * 2**20}")
        if lim.address_space_gb:
            out.append(f"--as={int(lim.address_space_gb * 2**30)}")
        return out + ["--"]

    def step_env(self, base: dict[str, str], extra: dict[str, str] | None = None) -> dict[str, str]:
        """The allow-listed environment of a step: a fixed PATH and locale, HOME and TMPDIR in the
        private /tmp, the pass-through names from `base`, and `extra` (set by the grader)."""
        nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
        toolkit_bin = [os.path.dirname(nvcc)] if os.path.exists(nvcc) else []
        seen = toolkit_bin + [b for b in self.extra_bin if b not in toolkit_bin]
        env = {
            "PATH": ":".join(seen + ["/usr/local/bin", "/usr/bin", "/bin"]),
            "HOME": "/tmp",
            "TMPDIR": "/tmp",
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
        }
        env.update({k: base[k] for k in PASS_THROUGH if k in base})
        libs = [d for d in base.get("LD_LIBRARY_PATH", "").split(":") if d and self.visible(d)]
        if libs:  # the toolchain's own libraries (a compiler in /opt), never a path the step cannot see
            env["LD_LIBRARY_PATH"] = ":".join(libs)
        if not self.safe:  # unsafe: the step keeps the grader's environment, minus its secret
            env = {k: v for k, v in base.items() if k != "COURSE_GRADING_SECRET"}
        env.update(extra or {})
        return env


def under(path: str, roots: list[str]) -> bool:
    """Whether `path` is one of `roots` or inside one."""
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def bind_args(flag: str, path: str) -> list[str]:
    """One bind, at the same path inside; a symlink becomes the same symlink (its target is bound
    where it is listed itself)."""
    if os.path.islink(path) and flag == "--ro-bind" and os.path.isabs(os.readlink(path)) is False:
        return ["--symlink", os.readlink(path), path]
    return [flag, path, path]


def ancestors(paths: list[str]) -> list[str]:
    """The folders above the binds, made searchable inside (bubblewrap would copy a 0700 parent's
    mode, and the step's uid could not reach what it was given); they hold nothing but the binds."""
    out: list = []
    bound = [os.path.abspath(p) for p in paths] + ["/proc", "/dev"]
    for p in paths:
        parts = [x for x in os.path.dirname(os.path.abspath(p)).split("/") if x]
        for i in range(1, len(parts) + 1):
            d = "/" + "/".join(parts[:i])
            if d not in out and d != "/tmp" and not any(d == b or d.startswith(b + "/") for b in bound):
                out.append(d)
    args = []
    for d in sorted(out, key=lambda x: x.count("/")):
        args += ["--perms", "0755", "--dir", d]
    return args


def system_paths() -> list[str]:
    """What every step may read: the system's programs and libraries, the dynamic linker's
    configuration, and the CUDA toolkit (where nvcc is)."""
    out = [p for p in SYSTEM_DIRS + ETC_FILES if os.path.lexists(p)]
    nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else "")
    if nvcc:
        toolkit = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
        if not toolkit.startswith("/usr/"):
            out.append(toolkit)
    return out


def gpu_nodes() -> list[str]:
    return sorted(glob.glob("/dev/nvidia[0-9]*")) + [p for p in GPU_NODES if os.path.exists(p)]


def core_plan(slots: int, cores: list[int] | None = None) -> list[str]:
    """The CPU cores of each device slot's runs, as taskset lists, and last the builds' cores: a
    timed run never shares a core with a build or with another slot's run. Each slot gets an equal
    share of half the cores (at least one), the builds the rest (at least one; on a machine too
    small to split, everything shares and the list says so by repeating cores)."""
    cores = sorted(os.sched_getaffinity(0)) if cores is None else cores
    per = max(1, len(cores) // (2 * slots))
    out = [cores[i * per : (i + 1) * per] for i in range(slots)]
    rest = cores[slots * per :] or cores
    out = [c or cores for c in out]
    return [",".join(map(str, c)) for c in out] + [",".join(map(str, rest))]


def uid_tasks(uid: int) -> int:
    """The threads of every process of `uid` (what RLIMIT_NPROC counts)."""
    n = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/status", encoding="utf-8") as fh:
                fields = dict(line.split(":", 1) for line in fh.read().split("\n") if ":" in line)
            if int(fields["Uid"].split()[0]) == uid:
                n += int(fields["Threads"])
        except (OSError, KeyError, ValueError, IndexError):
            continue
    return n


@functools.lru_cache(maxsize=None)
def bwrap_sizes_tmpfs(bwrap: str) -> bool:
    """Whether this bubblewrap takes --size for a tmpfs (0.8 and later)."""
    try:
        out = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return "--size" in out.stdout + out.stderr


def tmpfs_size_args(bwrap: str, megabytes: int) -> list[str]:
    """bubblewrap's arguments that size the next --tmpfs to `megabytes` (none when it cannot, or 0)."""
    if megabytes <= 0 or not bwrap or not bwrap_sizes_tmpfs(bwrap):
        return []
    return ["--size", str(megabytes << 20)]


def open_for_step(path: str) -> None:
    """A folder a step writes: writable by the step's uid (an unprivileged one when the grader is
    root). It is bound into the step, so a student's later runs read what the earlier ones left
    there (their own logs and rows); the profile step gets a folder of its own, away from them."""
    os.makedirs(path, exist_ok=True)
    os.chmod(path, 0o777)


def tree_pids(root: int) -> list[int]:
    """root and every process descended from it (the sandbox's processes, a setsid child included:
    it is reparented to the namespace's first process, which descends from root)."""
    children: dict = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(pid))
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


def tree_usage(root: int) -> tuple[float, int]:
    """(resident GiB, processes) of root's process tree."""
    rss, n = 0, 0
    page = os.sysconf("SC_PAGE_SIZE")
    for pid in tree_pids(root):
        try:
            with open(f"/proc/{pid}/statm", encoding="utf-8") as fh:
                rss += int(fh.read().split()[1]) * page
            n += 1
        except (OSError, IndexError, ValueError):
            continue
    return rss / 2**30, n


def probe(unsafe: bool = False) -> Sandbox:
    """The sandbox this machine can give: bubblewrap, checked by running a step in it (as an
    unprivileged uid of its own when the grader is root, else as the grader's uid); "unsafe" only
    when asked for. Raises SandboxError, with how to install bubblewrap, when neither works."""
    if unsafe:
        return Sandbox(mode="unsafe")
    bwrap = shutil.which("bwrap") or os.environ.get("COURSE_BWRAP", "")
    if not bwrap or not os.access(bwrap, os.X_OK):
        raise SandboxError(
            "bubblewrap (bwrap) is not installed: `sudo apt-get install bubblewrap`, or without root "
            "`apt-get download bubblewrap && dpkg -x bubblewrap_*.deb ~/bwrap` and put ~/bwrap/usr/bin on "
            "PATH (or COURSE_BWRAP=~/bwrap/usr/bin/bwrap); --unsafe-no-sandbox grades without it "
            "(every report then says so)"
        )
    version = subprocess.run([bwrap, "--version"], capture_output=True, text=True).stdout.split()[-1:] or ["?"]
    box = Sandbox(mode="bwrap", bwrap=bwrap, version=version[0])
    tried = []
    for drop in [os.geteuid() == 0]:
        box.drop_uid = drop
        p = subprocess.run(box.command(["/bin/true"], env=box.step_env({})), capture_output=True, text=True)
        if p.returncode == 0:
            return box
        tried.append(f"{'as root' if drop else 'unprivileged'}: {p.stderr.strip()[:200]}")
    raise SandboxError(
        "bubblewrap cannot start a sandbox here ("
        + "; ".join(tried)
        + "): unprivileged user namespaces may be disabled (sysctl kernel.unprivileged_userns_clone=1, "
        "or on Ubuntu kernel.apparmor_restrict_unprivileged_userns=0); --unsafe-no-sandbox grades without it"
    )
