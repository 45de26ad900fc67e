#!/usr/bin/env python3
"""The C++/CUDA style the repository keeps (.clang-format), checked or applied.

    python3 scripts/cpp_style.py          # check: names every file clang-format would change, exit 1
    python3 scripts/cpp_style.py --fix    # apply it in place

Uses the clang-format that requirements.txt pins (the PyPI wheel), never whatever is on PATH:
every clang-format release formats slightly differently, and CI must agree with a laptop. Exit 77
(CTest's skip) when that wheel is not installed.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXTENSIONS = (".cpp", ".hpp", ".cu", ".cuh", ".h")
SKIP_DIRS = {"build", "results", "data", ".git", ".cis565"}


def pinned_version() -> str:
    """The clang-format version requirements.txt pins."""
    with open(os.path.join(ROOT, "requirements.txt"), encoding="utf-8") as fh:
        m = re.search(r"^clang-format==(\S+)", fh.read(), flags=re.M)
    if not m:
        sys.exit("cpp_style: requirements.txt pins no clang-format version")
    return m.group(1)


def clang_format_binary(version: str) -> str:
    """The pinned wheel's binary; exit 77 (skip) when it is missing or another version."""
    try:
        import clang_format
    except ImportError:
        print(f"skipped: clang-format {version} is not installed (python3 -m pip install -r requirements.txt)")
        sys.exit(77)
    exe = os.path.join(os.path.dirname(clang_format.__file__), "data", "bin", "clang-format")
    out = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    if f"version {version}" not in out:
        print(f"skipped: the installed clang-format wheel is '{out.strip()}', requirements.txt pins {version}")
        sys.exit(77)
    return exe


def source_files() -> list[str]:
    """The C++/CUDA files of the tree: git's tracked ones, or a walk where there is no git."""
    r = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], capture_output=True, text=True)
    if r.returncode == 0 and r.stdout:
        files = [f for f in r.stdout.split("\0") if f]
    else:
        files = []
        for d, subdirs, names in os.walk(ROOT):
            subdirs[:] = sorted(s for s in subdirs if s not in SKIP_DIRS)
            files += [os.path.relpath(os.path.join(d, n), ROOT) for n in sorted(names)]
    return [f for f in files if f.endswith(EXTENSIONS) and os.path.isfile(os.path.join(ROOT, f))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fix", action="store_true", help="rewrite the files in place")
    a = ap.parse_args()
    exe = clang_format_binary(pinned_version())
    files = source_files()
    if a.fix:
        subprocess.run([exe, "-i", *files], cwd=ROOT, check=True)
        print(f"cpp_style: {len(files)} files formatted")
        return 0
    differ = []
    for f in files:
        with open(os.path.join(ROOT, f), "rb") as fh:
            before = fh.read()
        after = subprocess.run([exe, f"--assume-filename={f}"], input=before, capture_output=True, cwd=ROOT)
        if after.returncode != 0:
            sys.exit(f"cpp_style: clang-format failed on {f}: {after.stderr.decode(errors='replace').strip()}")
        if after.stdout != before:
            differ.append(f)
    if differ:
        print(f"cpp_style: {len(differ)} of {len(files)} files differ from .clang-format:")
        for f in differ:
            print(f"  {f}")
        print("fix: python3 scripts/cpp_style.py --fix")
        return 1
    print(f"cpp_style: {len(files)} files follow .clang-format")
    return 0


if __name__ == "__main__":
    sys.exit(main())
