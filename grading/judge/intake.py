"""What the grader reads of a submission, read as hostile input.

A submission is a folder the student controls entirely: its files may be symlinks (to a
classmate's file, to /dev/zero, to the grader's own files), FIFOs that block the reader forever,
devices, gigabyte files, names with spaces, control characters or none of UTF-8, and a `.git`
whose configuration runs programs. Everything the grader takes from it goes through here:

- files: regular files only, opened component by component below the submission's root without
  following a symlink anywhere (the file or a folder above it), never opened when they are not a
  regular file (a FIFO, socket or device), checked again on the open descriptor (fstat: nothing
  was swapped in between), and read with a bounded read up to a per-file cap;
- folders: walked without following symlinks, bounded in entries and depth;
- the class folder: one entry per student, those that are not a plain folder skipped with the
  reason, every name mapped to a safe id (the folder names of the grader's own output), the
  original kept for display;
- git: never run with the submission's own configuration, hooks or refs: HEAD and refs are parsed
  here, and only the commit's time is asked of git, in a temporary repository of the grader's that
  borrows the submission's objects, with a minimal environment and a timeout."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import subprocess
import tempfile
import unicodedata
from dataclasses import dataclass
from typing import Sequence

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
FILE_CAP = 1 * MiB  # the default cap of a submitted exercise file (rubric.toml [grading] file_limit_kb)
WALK_MAX_ENTRIES = 50_000  # a submission's tree: entries looked at for "edited outside the exercises"
WALK_MAX_DEPTH = 32
ID_MAX = 48  # a student id's length (a folder name, never a path)
GIT_TIMEOUT_S = 20
GIT_SMALL_CAP = 4 * KiB  # HEAD, a loose ref
GIT_PACKED_REFS_CAP = 32 * MiB

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_NOCTTY = getattr(os, "O_NOCTTY", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


class Refused(Exception):
    """A path of the submission the grader does not read; str() names the file and why."""

    def __init__(self, rel: str, why: str, missing: bool = False) -> None:
        super().__init__(f"{rel} {why}")
        self.rel, self.why, self.missing = rel, why, missing


def size_text(n: float) -> str:
    """1.0 GiB, 3.5 MiB, 12.0 KiB, 17 bytes."""
    for unit, name in ((GiB, "GiB"), (MiB, "MiB"), (KiB, "KiB")):
        if n >= unit:
            return f"{n / unit:.1f} {name}"
    return f"{int(n)} bytes"


def cap_text(n: int) -> str:
    """A cap as the rubric states it: 1 MiB, 512 KiB."""
    for unit, name in ((GiB, "GiB"), (MiB, "MiB"), (KiB, "KiB")):
        if n >= unit:
            return f"{n / unit:g} {name}"
    return f"{n} bytes"


def kind_of(mode: int) -> str:
    """What a file of this mode is, as the refusal says it."""
    for test, name in (
        (stat.S_ISLNK, "a symlink"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISREG, "a regular file"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _parts(rel: str) -> list[str]:
    parts = rel.replace(os.sep, "/").split("/")
    if rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise Refused(rel, "is not a plain path inside the submission")
    return parts


def _open_dir(root: str) -> int:
    try:
        return os.open(root, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
    except OSError as e:
        raise Refused(root, f"cannot be opened as a folder ({e.strerror})") from None


def _describe(dfd: int, name: str, rel: str, err: OSError) -> Refused:
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except OSError:
        return Refused(rel, "is missing from the submission", missing=True)
    return Refused(rel, f"is {kind_of(st.st_mode)}" if not stat.S_ISREG(st.st_mode) else f"cannot be read ({err})")


def _walk_down(root: str, rel: str) -> tuple[int, str]:
    """(descriptor of the folder that holds rel's last component, that component), every folder on
    the way opened without following a symlink."""
    parts = _parts(rel)
    fd = _open_dir(root)
    try:
        for i, p in enumerate(parts[:-1]):
            here = "/".join(parts[: i + 1])
            try:
                st = os.stat(p, dir_fd=fd, follow_symlinks=False)
            except OSError:
                raise Refused(rel, "is missing from the submission", missing=True) from None
            if not stat.S_ISDIR(st.st_mode):
                raise Refused(rel, f"is in {here}, which is {kind_of(st.st_mode)}")
            try:
                nfd = os.open(p, os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=fd)
            except OSError as e:
                raise Refused(rel, f"is in {here}, which cannot be opened ({e.strerror})") from None
            os.close(fd)
            fd = nfd
    except BaseException:
        os.close(fd)
        raise
    return fd, parts[-1]


def lstat_in(root: str, rel: str) -> os.stat_result:
    """rel's own status (a symlink is not followed; nor is any folder above it); Refused when a
    folder on the way is not a plain folder or rel is missing."""
    dfd, name = _walk_down(root, rel)
    try:
        return os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except OSError:
        raise Refused(rel, "is missing from the submission", missing=True) from None
    finally:
        os.close(dfd)


def open_regular(root: str, rel: str) -> tuple[int, os.stat_result]:
    """(descriptor, status) of the regular file rel below root. Refused, without opening it, when
    it or a folder above it is a symlink, or it is a FIFO, socket, device or folder; the open
    (O_NOFOLLOW | O_NONBLOCK: a FIFO swapped in cannot block) is checked again with fstat."""
    dfd, name = _walk_down(root, rel)
    try:
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except OSError:
            raise Refused(rel, "is missing from the submission", missing=True) from None
        if not stat.S_ISREG(st.st_mode):
            raise Refused(rel, f"is {kind_of(st.st_mode)}")
        flags = os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_NOCTTY | _O_CLOEXEC
        try:
            fd = os.open(name, flags, dir_fd=dfd)
        except OSError as e:
            raise _describe(dfd, name, rel, e) from None
    finally:
        os.close(dfd)
    now = os.fstat(fd)
    if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
        os.close(fd)
        raise Refused(rel, f"changed while it was opened (now {kind_of(now.st_mode)})")
    return fd, now


def read_bytes(root: str, rel: str, cap: int = FILE_CAP) -> bytes:
    """The content of the regular file rel below root, at most `cap` bytes, read in bounded chunks
    (a file over the cap is refused by its size, without reading it)."""
    fd, st = open_regular(root, rel)
    with os.fdopen(fd, "rb", buffering=0) as fh:
        if st.st_size > cap:
            raise Refused(rel, f"is {size_text(st.st_size)}, the cap is {cap_text(cap)}")
        data = bytearray()
        while len(data) <= cap:
            chunk = fh.read(min(64 * KiB, cap + 1 - len(data)))
            if not chunk:
                break
            data += chunk
    if len(data) > cap:
        raise Refused(rel, f"grew past the cap of {cap_text(cap)} while it was read")
    return bytes(data)


def read_text(root: str, rel: str, cap: int = FILE_CAP) -> str:
    """read_bytes as UTF-8 text; Refused when it is not UTF-8."""
    data = read_bytes(root, rel, cap)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise Refused(rel, "is not UTF-8 text") from None


def same_content(root: str, rel: str, other: str, cap: int = 64 * MiB) -> bool:
    """Whether the submission's regular file rel holds exactly the bytes of the (trusted) file
    `other`: sizes first, then both read chunk by chunk (never whole). A file that is not a regular
    file, or is over `cap`, is not the same."""
    try:
        want = os.stat(other).st_size
        fd, st = open_regular(root, rel)
    except (OSError, Refused):
        return False
    with os.fdopen(fd, "rb", buffering=0) as fa:
        if st.st_size != want or st.st_size > cap:
            return False
        try:
            with open(other, "rb") as fb:
                while True:
                    a, b = fa.read(64 * KiB), fb.read(64 * KiB)
                    if a != b:
                        return False
                    if not a:
                        return True
        except OSError:
            return False


@dataclass
class Tree:
    """What walk() found: regular files (rel -> size), other entries (rel -> what they are), and
    whether the walk stopped at its bounds."""

    files: dict
    others: dict
    truncated: bool = False


def walk(root: str, prune: Sequence[str] = (), prune_top: Sequence[str] = ()) -> Tree:
    """Every entry below root, by lstat (a symlink is an entry, never followed, whether to a file or
    a folder), without the folders named in `prune` (anywhere) or `prune_top` (at the root);
    bounded by WALK_MAX_ENTRIES and WALK_MAX_DEPTH."""
    out = Tree(files={}, others={})
    stack = [("", 0)]
    seen = 0
    while stack:
        rel_d, depth = stack.pop()
        try:
            with os.scandir(os.path.join(root, rel_d) if rel_d else root) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            out.others[rel_d or "."] = "a folder that cannot be read"
            continue
        for e in entries:
            seen += 1
            if seen > WALK_MAX_ENTRIES:
                out.truncated = True
                return out
            rel = f"{rel_d}/{e.name}" if rel_d else e.name
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                if e.name in prune or (not rel_d and e.name in prune_top):
                    continue
                if depth + 1 >= WALK_MAX_DEPTH:
                    out.truncated = True
                    continue
                stack.append((rel, depth + 1))
            elif stat.S_ISREG(st.st_mode):
                out.files[rel] = st.st_size
            else:
                out.others[rel] = kind_of(st.st_mode)
    return out


# ---- the class folder ---------------------------------------------------------------------------
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def display_name(name: str) -> str:
    """A folder name as reports show it: valid Unicode (bytes that are not UTF-8 replaced), without
    control characters, at most 200 characters. The formats escape it further for their syntax."""
    text = name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    text = "".join(c if unicodedata.category(c)[0] != "C" else "?" for c in text)
    return text[:200]


def safe_id(name: str) -> str:
    """The id of a student folder name: [A-Za-z0-9_-], starting with a letter or digit, at most
    ID_MAX characters; a name that is already one is its own id, any other gets its sanitized form
    and 8 hex digits of its hash (two names never share an id by sanitizing alike)."""
    raw = name.encode("utf-8", "surrogateescape")
    ascii_ = unicodedata.normalize("NFKD", raw.decode("utf-8", "replace")).encode("ascii", "ignore").decode()
    base = _UNSAFE.sub("_", ascii_).strip("_-")
    if base == name and 0 < len(base) <= ID_MAX:
        return base
    return f"{base[: ID_MAX - 9] or 'student'}-{hashlib.sha256(raw).hexdigest()[:8]}"


def assign_ids(names: Sequence[str]) -> dict[str, str]:
    """{name: id} for the names of one class: safe_id, made unique (ignoring case: a folder per id on
    any file system) in the names' sorted order, so every process that lists the same class (a
    shard, the merge) gives every student the same id."""
    out, taken = {}, set()
    for n in sorted(names):
        sid = base = safe_id(n)
        k = 2
        while sid.lower() in taken:
            sid, k = f"{base[: ID_MAX - 6]}-{k}", k + 1
        taken.add(sid.lower())
        out[n] = sid
    return out


@dataclass
class Skipped:
    """A class folder's entry that is not graded, and why."""

    name: str  # as display_name() shows it
    why: str


def _unusable(folder: str, name: str, exclude: Sequence[str]) -> str:
    """Why the entry `name` of the class folder is not a student's checkout, or ""."""
    path = os.path.join(folder, name)
    if name.startswith("."):
        return "a hidden entry (its name starts with a dot): not graded"
    try:
        st = os.lstat(path)
    except OSError as e:
        return f"cannot be looked at ({e.strerror})"
    if stat.S_ISLNK(st.st_mode):
        return "is a symlink (a student folder must be a folder of its own: not followed)"
    if not stat.S_ISDIR(st.st_mode):
        return f"is {kind_of(st.st_mode)}, not a folder"
    if not os.access(path, os.R_OK | os.X_OK):
        return "is a folder the grader cannot read (its permissions)"
    real = os.path.realpath(path)
    for ex in exclude:
        ex = os.path.realpath(ex)
        if real == ex or ex.startswith(real + os.sep) or real.startswith(ex + os.sep):
            return "is (or holds) the grader's own output folder"
    return ""


def list_students(folder: str, exclude: Sequence[str] = ()) -> tuple[list[tuple[str, str]], list[Skipped]]:
    """([(id, path)], [skipped]) of a class folder: one plain folder per student, each under its
    safe id; symlinks, files, FIFOs, dot-entries, unreadable folders and the grader's own output
    folder (`exclude`) are skipped with the reason. Raises OSError when the folder cannot be listed."""
    names = sorted(os.listdir(folder))
    good, skipped = [], []
    for n in names:
        why = _unusable(folder, n, exclude)
        if why:
            skipped.append(Skipped(display_name(n), why))
        else:
            good.append(n)
    ids = assign_ids(good)
    return [(ids[n], os.path.join(folder, n)) for n in good], skipped


# ---- git, without the submission's configuration -------------------------------------------------
_HEX = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
_REF = re.compile(r"^refs/(?:[A-Za-z0-9._+-]+/)*[A-Za-z0-9._+-]+$")
_GIT_OUT = re.compile(r"^([0-9a-f]{40}|[0-9a-f]{64}) (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:Z|[+-]\d\d:\d\d))$")


def _resolve_ref(root: str, ref: str, depth: int = 0) -> str:
    """The commit a ref names, from the loose ref file or packed-refs (both read as data)."""
    if depth > 4 or not _REF.match(ref) or ".." in ref or ref.endswith(".lock"):
        return ""
    try:
        text = read_bytes(root, ".git/" + ref, GIT_SMALL_CAP).decode("ascii", "replace").strip()
    except Refused:
        text = ""
    if text.startswith("ref: "):
        return _resolve_ref(root, text[5:].strip(), depth + 1)
    if _HEX.match(text):
        return text
    try:
        packed = read_bytes(root, ".git/packed-refs", GIT_PACKED_REFS_CAP).decode("ascii", "replace")
    except Refused:
        return ""
    for line in packed.split("\n"):
        sha, _, name = line.strip().partition(" ")
        if name == ref and _HEX.match(sha):
            return sha
    return ""


def head_commit(root: str) -> tuple[str, str]:
    """(commit, "") of the submission's HEAD, parsed from its files (git is not run), or ("", why)
    when there is none to read: no .git, a .git that is a file (a gitdir link) or a symlink (not
    followed), a HEAD that names nothing."""
    try:
        st = lstat_in(root, ".git")
    except Refused as e:
        return "", "" if e.missing else str(e)
    if not stat.S_ISDIR(st.st_mode):
        return "", f".git is {kind_of(st.st_mode)} (not followed)"
    try:
        head = read_bytes(root, ".git/HEAD", GIT_SMALL_CAP).decode("ascii", "replace").strip()
    except Refused as e:
        return "", str(e)
    if _HEX.match(head):
        return head, ""
    if head.startswith("ref: "):
        sha = _resolve_ref(root, head[5:].strip())
        return (sha, "") if sha else ("", "HEAD names no commit")
    return "", "HEAD is not a commit or a ref"


def git_env(git_dir: str, objects: str) -> dict[str, str]:
    """The whole environment of the grader's git: its own repository and configuration, nothing of
    the grader's (no secret), nothing of the user's (no global or system configuration)."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LC_ALL": "C",
        "HOME": git_dir,
        "XDG_CONFIG_HOME": git_dir,
        "GIT_DIR": git_dir,
        "GIT_OBJECT_DIRECTORY": objects,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CEILING_DIRECTORIES": os.path.dirname(git_dir),
        "GIT_NO_REPLACE_OBJECTS": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_PAGER": "cat",
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_OPTIONAL_LOCKS": "0",
    }


def commit_time(root: str, commit: str, timeout: float = GIT_TIMEOUT_S) -> str:
    """The commit's committer time (ISO 8601), read by git in a temporary repository of the
    grader's whose only borrowed part is the submission's object folder: the submission's config,
    hooks, refs and attributes are never read. "" when git cannot say (or took too long)."""
    git = shutil.which("git")
    if not git or not _HEX.match(commit):
        return ""
    try:
        st = lstat_in(root, ".git/objects")
    except Refused:
        return ""
    if not stat.S_ISDIR(st.st_mode):
        return ""
    tmp = tempfile.mkdtemp(prefix="judge-git-")
    try:
        os.makedirs(os.path.join(tmp, "refs"))
        os.makedirs(os.path.join(tmp, "objects"))
        with open(os.path.join(tmp, "HEAD"), "w", encoding="ascii") as fh:
            fh.write(commit + "\n")
        with open(os.path.join(tmp, "config"), "w", encoding="ascii") as fh:
            fh.write(
                "[core]\n\trepositoryformatversion = 1\n\tbare = true\n"
                + ("[extensions]\n\tobjectformat = sha256\n" if len(commit) == 64 else "")
            )
        objects = os.path.join(os.path.abspath(root), ".git", "objects")
        cmd = [git, "log", "-1", "--no-walk", "--no-show-signature", "--format=%H %cI", commit, "--"]
        p = subprocess.run(
            cmd,
            cwd=tmp,
            env=git_env(tmp, objects),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    m = _GIT_OUT.match(p.stdout.decode("ascii", "replace").strip()) if p.returncode == 0 else None
    return m.group(2) if m and m.group(1) == commit else ""


def newest_mtime(root: str, rels: Sequence[str]) -> float | None:
    """The newest modification time of the regular files rels (by lstat; others are left out)."""
    times = []
    for rel in rels:
        try:
            st = lstat_in(root, rel)
        except Refused:
            continue
        if stat.S_ISREG(st.st_mode):
            times.append(st.st_mtime)
    return max(times) if times else None
