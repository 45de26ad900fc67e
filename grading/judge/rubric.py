"""The rubric (grading/rubric.toml): points per version, the visible and hidden cases each version
runs, secret seeds, time and resource limits, and the fixed maximum of an assignment."""

from __future__ import annotations

import hashlib
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any

try:
    import tomllib  # Python >= 3.11
except ModuleNotFoundError:  # pragma: no cover - Python 3.8-3.10 with the tomli package
    try:
        import tomli as tomllib
    except ModuleNotFoundError:
        sys.exit("grade: reading the rubric needs Python >= 3.11 (tomllib) or the tomli package")

SUBPROJECTS = ("stream_compaction", "nbody", "ground_seg", "ndt_graph")
SECRET_ENV = "COURSE_GRADING_SECRET"
VISIBILITIES = ("visible", "hidden", "after_published")
DEFAULT_CHECKER_FILES = ("*/src/reference.cpp", "*/src/check.cpp", "*/app/*.cpp")
DEFAULT_LIBRARIES = ("cub::", "thrust::", "cuda::", "cudax::", "cutlass::", "cute::", "cooperative_groups::")


class RubricError(Exception):
    pass


@dataclass
class Case:
    """One driver invocation that grades a version."""

    name: str
    args: list
    hidden: bool = False
    visibility: str = "visible"  # hidden cases: what the report shows of them
    timed: bool = False  # the case whose time is compared with the reference


@dataclass
class VersionRule:
    subproject: str
    version: str
    driver: str
    correct: float
    speed: float
    requires: list
    allow: list  # kernel name patterns this version may launch besides its own
    cases: list  # [Case]: the visible case first
    timed_kind: str = "version"
    timed_params: str = ""
    # library kernels that set up memory or a container ([grading] containers): allowed everywhere,
    # reported as such; the algorithms an exercise is about (scan, reduce, select, sort) are not
    containers: list = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.subproject}/{self.version}"

    @property
    def points_max(self) -> float:
        return self.correct + self.speed


@dataclass
class Limits:
    timeout_min_s: float = 10.0
    timeout_factor: float = 10.0
    timeout_s: float = 300.0  # without a reference time for the case
    memory_limit_gb: float = 32.0  # host resident memory of the driver's process group
    output_limit_kb: int = 256  # what is kept of a run's output (head and tail)
    file_limit_kb: int = 1024  # the largest submitted exercise file the grader reads (intake.py)

    def time_limit(self, reference_seconds: float | None) -> float:
        if reference_seconds is None:
            return self.timeout_s
        return max(self.timeout_min_s, self.timeout_factor * reference_seconds)


@dataclass
class Rubric:
    path: str
    sha256: str
    limits: Limits
    speed_full: float
    speed_zero: float
    libraries: tuple
    versions: list = field(default_factory=list)  # [VersionRule] in rubric order
    checker_files: tuple = ()  # globs of the harness's reference and checker sources ([grading] checker_files)
    # a test's weight by a token of its name ([grading.case_weights]: "n=0" = 0.5); every other test 1
    case_weights: dict = field(default_factory=dict)
    memcheck: str = "warning"  # off / warning / points (checker_memcheck)
    memcheck_cost: float = 0.25  # the share of correctness points memory errors cost with "points"
    # a case whose time earns nothing (every case but a speed version's timed one) runs with
    # --reps untimed_reps where it has a --reps (None: the rubric's own); such cases run
    # `untimed_parallel` at once
    untimed_reps: int | None = None
    untimed_parallel: int = 1
    # each graded GPU version's Nsight Compute profile on the grading GPU, informational (checker_profile):
    # run after the graded cases, at most profile_timeout_s a version
    profile: bool = True
    profile_timeout_s: float = 120.0
    # the timed cases of a driver's versions with the same arguments in one process, each kernel
    # attributed by the version's NVTX range (runner_case.run_group); a version whose share is not
    # wholly clean runs alone again
    group_timed: bool = True

    def select(self, subprojects: list[str] | None = None, versions: list[str] | None = None) -> list[VersionRule]:
        out = []
        for v in self.versions:
            if subprojects and v.subproject not in subprojects:
                continue
            if versions and v.version not in versions and v.key not in versions:
                continue
            out.append(v)
        return out

    def rule(self, key: str) -> VersionRule:
        return next(v for v in self.versions if v.key == key)


def secret_seed(secret: str, subproject: str, case: str, seed: int) -> int:
    """The seed a hidden case runs with: the rubric's seed mixed with the instructor's secret, so
    a student who reads the rubric cannot precompute the inputs."""
    h = hashlib.sha256(f"{secret}\0{subproject}\0{case}\0{seed}".encode()).hexdigest()
    return int(h[:8], 16)


def _version_rule(
    path: str, sub: str, conf: dict[str, Any], name: str, vconf: dict[str, Any], secret: str
) -> VersionRule:
    """One [sub.version] table: its cases (visible, timed, hidden) and points, the sub-project's defaults under it."""
    cases = [Case("visible", list(vconf.get("args", conf.get("args", []))))]
    speed_args = vconf.get("speed_args", conf.get("speed_args") if "args" not in vconf else None)
    if speed_args:
        cases.append(Case("timed", list(speed_args), timed=True))
    else:
        cases[0].timed = True
    for i, e in enumerate(conf.get("cases", [])):
        cases.extend(named_case(path, sub, name, i, e, own_args="args" in vconf))
    for i, h in enumerate(conf.get("hidden", [])):
        cases.extend(hidden_case(path, sub, name, i, h, secret, own_args="args" in vconf))
    names = [c.name for c in cases]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:  # the reference record and the reports key a version's cases by name
        raise RubricError(f"{path}: [{sub}.{name}]: two cases named '{dup}'")
    return VersionRule(
        subproject=sub,
        version=name,
        driver=conf["driver"],
        correct=float(vconf.get("correct", 0)),
        speed=float(vconf.get("speed", 0)),
        requires=list(vconf.get("requires", [])),
        allow=list(vconf.get("allow", [])) + list(conf.get("allow", [])),
        cases=cases,
        timed_kind=vconf.get("timed_kind", conf.get("timed_kind", "version")),
        timed_params=vconf.get("timed_params", conf.get("timed_params", "")),
    )


def _subproject_rules(path: str, sub: str, conf: dict[str, Any], secret: str) -> list[VersionRule]:
    """The version rules of one sub-project's table, after checking the table itself."""
    if sub not in SUBPROJECTS:
        raise RubricError(f"{path}: [{sub}]: not a sub-project (known: {', '.join(SUBPROJECTS)})")
    if "driver" not in conf:
        raise RubricError(f"{path}: [{sub}]: no driver")
    for table in ("hidden", "cases"):
        if not isinstance(conf.get(table, []), list) or not all(isinstance(t, dict) for t in conf.get(table, [])):
            raise RubricError(f"{path}: [{sub}.{table}] must be an array of tables ([[{sub}.{table}]])")
        names = {k for k, v in conf.items() if isinstance(v, dict)}
        for t in conf.get(table, []):
            unknown = sorted(set(t.get("versions") or []) - names)
            if unknown:
                raise RubricError(f"{path}: [[{sub}.{table}]] '{t.get('name', '?')}': no version {', '.join(unknown)}")
    return [
        _version_rule(path, sub, conf, name, vconf, secret) for name, vconf in conf.items() if isinstance(vconf, dict)
    ]


def load(path: str, secret: str | None = None) -> Rubric:
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
        data = tomllib.loads(raw.decode("utf-8"))
    except OSError as e:
        raise RubricError(f"{path}: {e.strerror}") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise RubricError(f"{path}: {e}") from None
    secret = os.environ.get(SECRET_ENV, "") if secret is None else secret
    g = data.get("grading", {})
    lim = Limits(
        **{
            k: g[k]
            for k in (
                "timeout_min_s",
                "timeout_factor",
                "timeout_s",
                "memory_limit_gb",
                "output_limit_kb",
                "file_limit_kb",
            )
            if k in g
        }
    )
    rub = Rubric(
        path=os.path.abspath(path),
        sha256=hashlib.sha256(raw).hexdigest(),
        limits=lim,
        speed_full=float(g.get("speed_full", 0.8)),
        speed_zero=float(g.get("speed_zero", 0.25)),
        libraries=tuple(g.get("library_namespaces", DEFAULT_LIBRARIES)),
        checker_files=tuple(g.get("checker_files", DEFAULT_CHECKER_FILES)),
        case_weights=_case_weights(path, g.get("case_weights", {})),
        memcheck=str(g.get("memcheck", "warning")),
        memcheck_cost=float(g.get("memcheck_cost", 0.25)),
    )
    rub.untimed_reps, rub.untimed_parallel = _untimed(path, g)
    rub.profile, rub.profile_timeout_s = _profile(path, g)
    rub.group_timed = _flag(path, g, "group_timed", True)
    if rub.memcheck not in ("off", "warning", "points") or not 0 <= rub.memcheck_cost <= 1:
        raise RubricError(f"{path}: [grading] memcheck must be off, warning or points, memcheck_cost in [0, 1]")
    containers = g.get("containers", DEFAULT_CONTAINERS)
    if not isinstance(containers, list) or not all(isinstance(c, str) and c for c in containers):
        raise RubricError(f"{path}: [grading] containers must be a list of kernel-name patterns")
    for sub, conf in data.items():
        if sub != "grading":
            rub.versions += _subproject_rules(path, sub, conf, secret)
    for r in rub.versions:
        r.containers = list(containers)
        for c in r.cases:
            if rub.untimed_reps is not None and not timed_for_points(r, c):
                c.args = with_reps(c.args, rub.untimed_reps, warmup=0)
    return rub


def _untimed(path: str, g: dict[str, Any]) -> tuple[int | None, int]:
    """[grading] untimed_reps and untimed_parallel, checked."""
    for k in ("untimed_reps", "untimed_parallel"):
        v = g.get(k)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= 64):
            raise RubricError(f"{path}: [grading] {k} = {v!r}: a whole number from 1 to 64")
    return g.get("untimed_reps"), g.get("untimed_parallel", 1)


def _flag(path: str, g: dict[str, Any], key: str, default: bool) -> bool:
    """A true-or-false setting of [grading], checked."""
    v = g.get(key, default)
    if not isinstance(v, bool):
        raise RubricError(f"{path}: [grading] {key} = {v!r}: true or false")
    return v


def _profile(path: str, g: dict[str, Any]) -> tuple[bool, float]:
    """[grading] profile (true or false) and profile_timeout_s (seconds a version, 10 to 3600), checked."""
    on, limit = _flag(path, g, "profile", True), g.get("profile_timeout_s", 120)
    if isinstance(limit, bool) or not isinstance(limit, (int, float)) or not 10 <= limit <= 3600:
        raise RubricError(f"{path}: [grading] profile_timeout_s = {limit!r}: seconds from 10 to 3600")
    return on, float(limit)


def timed_for_points(rule: VersionRule, case: Case) -> bool:
    """Whether a case's time can earn points: the timed case of a version with speed points. Every
    other case is only checked: its timed samples are more checks of fresh inputs, no more."""
    return case.timed and rule.speed > 0


def with_reps(args: list[str], reps: int, warmup: int | None = None) -> list[str]:
    """The driver arguments with their `--reps` set to `reps` and, given `warmup`, `--warmup` set
    to it (a checked case's warm-up runs check nothing its samples do not: a CPU compaction of 2^26
    spent 1.1 s of a graded process in its two). A case without --reps keeps its arguments: its
    driver's mode may read neither (nbody's scaling table refuses them)."""
    out = list(args)
    found = False
    for i, a in enumerate(out):
        if a == "--reps" and i + 1 < len(out):
            out[i + 1], found = str(reps), True
        elif a.startswith("--reps="):
            out[i], found = f"--reps={reps}", True
    if found and warmup is not None:
        out = [a for i, a in enumerate(out) if not a.startswith("--warmup") and (i == 0 or out[i - 1] != "--warmup")]
        out += ["--warmup", str(warmup)]
    return out


# The library kernels a container or a memory set-up launches (thrust::device_vector's
# construction, resize and fills, and the empty kernel CUB launches to bind its context): not the
# algorithms an exercise is about, so allowed in every version.
DEFAULT_CONTAINERS = [
    "cuda_cub::__uninitialized_fill::functor",
    "cuda_cub::__fill::functor",
    "cuda_cub::__uninitialized_copy::functor",
    "::detail::EmptyKernel",
]


def _case_weights(path: str, conf: object) -> dict[str, float]:
    if not isinstance(conf, dict):
        raise RubricError(f"{path}: [grading.case_weights] must be a table of token = weight")
    out = {}
    for tok, w in conf.items():
        if not isinstance(w, (int, float)) or isinstance(w, bool) or not 0 <= w <= 100:
            raise RubricError(f"{path}: [grading.case_weights] '{tok}': {w!r} is not a weight in [0, 100]")
        out[str(tok)] = float(w)
    return out


def _applies(h: dict[str, Any], version: str, own_args: bool) -> bool:
    """Whether a named or hidden case is one of the version's: a case runs the sub-project's driver
    arguments, so a version with its own arguments takes it only when the case names it in
    `versions`."""
    only = h.get("versions")
    if only is not None:
        return version in only
    return not own_args


def named_case(path: str, sub: str, version: str, index: int, e: dict[str, Any], own_args: bool) -> list[Case]:
    """A visible case of its own ([[sub.cases]]: a name and the driver's arguments, such as an edge
    input), run after the visible case whatever it gave; nothing where it does not apply."""
    if not _applies(e, version, own_args):
        return []
    name = e.get("name")
    if not name or not isinstance(name, str):
        raise RubricError(f"{path}: [[{sub}.cases]] number {index + 1}: no name")
    if not e.get("args"):
        raise RubricError(f"{path}: [[{sub}.cases]] '{name}': no args")
    return [Case(name, [str(a) for a in e["args"]])]


def hidden_case(
    path: str, sub: str, version: str, index: int, h: dict[str, Any], secret: str, own_args: bool
) -> list[Case]:
    """The hidden case h for one version, or nothing when it does not apply to the version
    (_applies)."""
    name = h.get("name") or f"hidden {index + 1}"
    if not _applies(h, version, own_args):
        return []
    vis = h.get("visibility", "hidden")
    if vis not in VISIBILITIES:
        raise RubricError(f"{path}: [[{sub}.hidden]] '{name}': visibility '{vis}' (known: {', '.join(VISIBILITIES)})")
    args = [str(a) for a in h.get("args", [])]
    if "seed" in h:
        args += ["--seed", str(secret_seed(secret, sub, name, int(h["seed"])))]
    return [Case(name, args, hidden=True, visibility=vis)]


_HIDDEN_TABLE = re.compile(r"^\s*\[\[\s*[A-Za-z0-9_]+\.hidden\s*\]\]\s*(#.*)?$")
_ANY_TABLE = re.compile(r"^\s*\[")


def public_text(text: str) -> str:
    """The rubric as the handout carries it: without its hidden cases."""
    out, skipping = [], False
    for line in text.split("\n"):
        if _HIDDEN_TABLE.match(line):
            skipping = True
            continue
        if skipping and _ANY_TABLE.match(line):
            skipping = False
        if not skipping:
            out.append(line)
    return "\n".join(out)
