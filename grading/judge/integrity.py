"""The grader's own state, kept whole: what it cached or handed between its steps is verified by
content before it is used.

Every entry is signed with an HMAC-SHA256 whose key never reaches a student process: derived from
$COURSE_GRADING_SECRET when that is set (every step of a job, the Slurm shards and the merge, then
share it), else a random key created 0600 in the grader's cache folder on first use. The HMAC
covers a label (what the entry is for: an object of one compile's inputs, the reference record of
one device, one student's report in one job) and the content, so an entry is neither edited nor
moved to stand for another. An entry that fails verification is discarded (a cache entry is
rebuilt) and the grader says so; a shard's report that fails is refused (the student is listed
for a regrade).

Formats: a cache entry is one file, a fixed-size header line `course-judge-hmac-v1 <hex>` then
the content, written atomically (os.replace), so a reader never sees a signature of other bytes.
A report that other readers parse as it is (report.json) gets a sidecar `<file>.hmac`."""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
import sys
import threading
from typing import BinaryIO

from . import intake

SECRET_ENV = "COURSE_GRADING_SECRET"
KEY_FILE = "grader.key"
MAGIC = b"course-judge-hmac-v1 "
HEADER_LEN = len(MAGIC) + 64 + 1
CHUNK = 1 << 20

_keys: dict = {}
_lock = threading.Lock()


class Tampered(Exception):
    """An entry whose signature does not verify (or that cannot be read as an entry)."""


def warn(msg: str) -> None:
    print(f"[grade] warning: {msg}", file=sys.stderr, flush=True)


def _key_file(cache_dir: str) -> bytes:
    path = os.path.join(cache_dir, KEY_FILE)
    os.makedirs(cache_dir, mode=0o700, exist_ok=True)
    if not os.path.lexists(path):
        tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(secrets.token_bytes(32))
        try:
            os.link(tmp, path)  # the first writer's key wins; never a half-written one
        except FileExistsError:
            pass
        finally:
            os.unlink(tmp)
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            raise PermissionError(f"{path}: the grader's key is not a file of this user's: refused")
        if st.st_mode & 0o077:
            os.fchmod(fh.fileno(), 0o600)
            warn(f"{path} was readable by others: made 0600 (regenerate it if others may have read it)")
        key = fh.read(4096)
    if len(key) < 32:
        raise PermissionError(f"{path}: the grader's key is too short: delete it to make a new one")
    return key


def key_for(cache_dir: str) -> bytes:
    """The job's signing key: from $COURSE_GRADING_SECRET, else the key file in cache_dir."""
    secret = os.environ.get(SECRET_ENV, "")
    if secret:
        return hmac.new(secret.encode(), b"course-judge integrity key v1", hashlib.sha256).digest()
    where = os.path.abspath(cache_dir)
    with _lock:
        if where not in _keys:
            _keys[where] = _key_file(where)
        return _keys[where]


def _mac(key: bytes, label: str) -> hmac.HMAC:
    m = hmac.new(key, digestmod=hashlib.sha256)
    m.update(label.encode("utf-8", "surrogateescape") + b"\0")
    return m


def sign(key: bytes, label: str, data: bytes) -> str:
    m = _mac(key, label)
    m.update(data)
    return m.hexdigest()


def _tmp_for(path: str) -> str:
    return f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"


def _copy_signed(fin: BinaryIO, fout: BinaryIO, m: hmac.HMAC) -> None:
    """fin's rest into fout, chunk by chunk, each chunk into the MAC as it passes."""
    while True:
        chunk = fin.read(CHUNK)
        if not chunk:
            return
        m.update(chunk)
        fout.write(chunk)


def store_file(key: bytes, label: str, src: str, path: str) -> None:
    """The file src as the signed entry `path` (atomic; one pass over src)."""
    tmp = _tmp_for(path)
    m = _mac(key, label)
    try:
        with open(src, "rb") as fin, open(tmp, "wb") as fout:
            fout.write(b"\0" * HEADER_LEN)
            _copy_signed(fin, fout, m)
            fout.seek(0)
            fout.write(MAGIC + m.hexdigest().encode() + b"\n")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def store_bytes(key: bytes, label: str, data: bytes, path: str) -> None:
    """data as the signed entry `path` (atomic)."""
    tmp = _tmp_for(path)
    with open(tmp, "wb") as fh:
        fh.write(MAGIC + sign(key, label, data).encode() + b"\n" + data)
    os.replace(tmp, path)


def _open_entry(path: str) -> tuple[int, int]:
    folder, name = os.path.split(os.path.abspath(path))
    try:
        fd, st = intake.open_regular(folder, name)
    except intake.Refused as e:
        raise Tampered(f"{path}: {e.why}") from None
    if st.st_size < HEADER_LEN:
        os.close(fd)
        raise Tampered(f"{path}: shorter than its signature")
    return fd, st.st_size


def _header(fh: object, path: str) -> bytes:
    head = fh.read(HEADER_LEN)
    if not head.startswith(MAGIC) or not head.endswith(b"\n"):
        raise Tampered(f"{path}: no signature")
    return head[len(MAGIC) : -1]


def load_file(key: bytes, label: str, path: str, dst: str) -> None:
    """The verified content of the signed entry `path`, copied to dst (atomic; one pass). Tampered
    when it does not verify (dst is then left as it was)."""
    fd, _ = _open_entry(path)
    tmp = _tmp_for(dst)
    m = _mac(key, label)
    try:
        with os.fdopen(fd, "rb") as fin, open(tmp, "wb") as fout:
            want = _header(fin, path)
            _copy_signed(fin, fout, m)
        if not hmac.compare_digest(m.hexdigest().encode(), want):
            raise Tampered(f"{path}: its content does not match its signature")
        os.replace(tmp, dst)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def load_bytes(key: bytes, label: str, path: str, cap: int = 256 << 20) -> bytes:
    """The verified content of the signed entry `path` (at most cap bytes); Tampered otherwise."""
    fd, size = _open_entry(path)
    with os.fdopen(fd, "rb") as fh:
        if size - HEADER_LEN > cap:
            raise Tampered(f"{path}: {intake.size_text(size)}, more than any entry of its kind")
        want = _header(fh, path)
        data = fh.read(cap + 1)
    if not hmac.compare_digest(sign(key, label, data).encode(), want):
        raise Tampered(f"{path}: its content does not match its signature")
    return data


# ---- the object cache and the reference record ---------------------------------------------------
def cached_object(cache_dir: str, name: str, dst: str) -> bool:
    """Copies the cached object `name` of cache_dir to dst when it is there and verifies; an entry
    that does not verify is discarded with a warning (the caller compiles it again)."""
    path = os.path.join(cache_dir, name)
    if not os.path.lexists(path):
        return False
    key = key_for(os.path.dirname(os.path.abspath(cache_dir)))
    try:
        load_file(key, "object:" + name, path, dst)
        return True
    except Tampered as e:
        warn(f"object cache: {e}: discarded, compiled again")
        discard(path)
        return False


def cache_object(cache_dir: str, name: str, src: str) -> None:
    """The compiled object src, signed into cache_dir as `name`."""
    key = key_for(os.path.dirname(os.path.abspath(cache_dir)))
    store_file(key, "object:" + name, src, os.path.join(cache_dir, name))


def discard(path: str) -> None:
    try:
        os.unlink(path)
    except OSError as e:
        warn(f"{path}: could not be removed ({e.strerror})")


def cached_record(cache_dir: str, name: str) -> bytes | None:
    """The verified content of the signed record `name` in cache_dir, or None (absent, or failed
    verification: discarded with a warning, to be computed again)."""
    path = os.path.join(cache_dir, name)
    if not os.path.lexists(path):
        return None
    try:
        return load_bytes(key_for(cache_dir), "record:" + name, path)
    except Tampered as e:
        warn(f"cached record: {e}: discarded, computed again")
        discard(path)
        return None


def cache_record(cache_dir: str, name: str, data: bytes) -> None:
    os.makedirs(cache_dir, mode=0o700, exist_ok=True)
    store_bytes(key_for(cache_dir), "record:" + name, data, os.path.join(cache_dir, name))


# ---- files other readers parse as they are: a sidecar signature --------------------------------
def sign_sidecar(key: bytes, label: str, path: str) -> None:
    """Writes path + ".hmac": the signature of path's content under label."""
    with open(path, "rb") as fh:
        data = fh.read()
    tmp = _tmp_for(path + ".hmac")
    with open(tmp, "w", encoding="ascii") as fh:
        fh.write(sign(key, label, data) + "\n")
    os.replace(tmp, path + ".hmac")


def verified_sidecar(key: bytes, label: str, path: str, cap: int = 256 << 20) -> bytes:
    """path's content when path + ".hmac" signs it under label; Tampered otherwise (missing,
    not regular files, edited, or signed for another label)."""
    folder, name = os.path.split(os.path.abspath(path))
    try:
        data = intake.read_bytes(folder, name, cap)
        want = intake.read_bytes(folder, name + ".hmac", 4096).strip()
    except intake.Refused as e:
        raise Tampered(f"{path}: {e.why}" if not e.missing else f"{e.rel} is missing (unsigned)") from None
    if not hmac.compare_digest(sign(key, label, data).encode(), want):
        raise Tampered(f"{path}: its content does not match its signature")
    return data
