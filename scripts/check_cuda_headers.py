#!/usr/bin/env python3
"""Checks that the project's code compiles against an older CUDA toolkit's headers.

No CUDA 12 compiler can be installed next to CUDA 13, but the CUDA 12 runtime, CCCL and CUPTI
headers ship as Python wheels (nvidia-cuda-runtime-cu12, -cccl-cu12, -cupti-cu12). This script takes every
translation unit of a configured build (its compile_commands.json) and runs its own compile
command again with those headers searched first: host C++ files with -fsyntax-only, CUDA files
through nvcc's front end only (-cuda, one virtual architecture), so each CUDA runtime call, type
and CUB/Thrust call is checked against the older declarations. An API that changed signature
(CUDA 13's graph-edge arguments), an enum or field that is new, a CUB overload that is newer:
each is a compile error naming the file and line.

  scripts/check_cuda_headers.py build/ci --cuda 12.4         # fetches the wheels with pip
  scripts/check_cuda_headers.py build/ci --headers DIR ...    # DIRs holding cuda_runtime.h / cub/

Exit status 0 when every unit compiles, 1 otherwise (the first errors of each unit are printed).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

# The releases of the runtime and the CCCL wheel that go with a CUDA minor version (12.4's first
# CCCL wheel, 12.4.127, was yanked as broken: it lacks libcu++).
WHEEL_RELEASES = {
    "12.4": ("12.4.127", "12.4.127.post1", "12.4.127"),
    "12.6": ("12.6.77", "12.6.77", "12.6.80"),
    "12.8": ("12.8.90", "12.8.90", "12.8.90"),
}
WHEELS = {
    "nvidia-cuda-runtime-cu12": "cuda_runtime",
    "nvidia-cuda-cccl-cu12": "cuda_cccl",
    "nvidia-cuda-cupti-cu12": "cuda_cupti",
}


def fetch_headers(version: str, cache: Path) -> list[Path]:
    """The include folders of the CUDA `version` runtime and CCCL wheels, downloaded into `cache`."""
    releases = WHEEL_RELEASES.get(version)
    if releases is None:
        raise SystemExit(f"--cuda {version}: known versions are {', '.join(WHEEL_RELEASES)}")
    dirs = []
    for (wheel, folder), release in zip(WHEELS.items(), releases):
        root = cache / f"{wheel}-{release}"
        include = root / "nvidia" / folder / "include"
        if not include.is_dir():
            with tempfile.TemporaryDirectory() as tmp:
                cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", tmp, f"{wheel}=={release}"]
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode != 0:
                    raise SystemExit(f"pip could not fetch {wheel}=={release}:\n{r.stderr.strip()}")
                (whl,) = Path(tmp).glob("*.whl")
                import zipfile

                with zipfile.ZipFile(whl) as z:
                    z.extractall(root)
        dirs.append(include)
    return dirs


def header_version(include_dirs: list[Path]) -> str:
    for d in include_dirs:
        h = d / "cuda_runtime_api.h"
        if h.is_file():
            for line in h.read_text(errors="replace").splitlines():
                if line.startswith("#define CUDART_VERSION"):
                    v = int(line.split()[2])
                    return f"{v // 1000}.{v % 1000 // 10}"
    raise SystemExit("no cuda_runtime_api.h in " + ", ".join(map(str, include_dirs)))


def check_command(entry: dict, include_dirs: list[Path], arch: str) -> list[str]:
    """The entry's compile command, changed to check only, with `include_dirs` searched first."""
    args = shlex.split(entry["command"]) if "command" in entry else list(entry["arguments"])
    out: list[str] = [args[0]] + [f"-I{d}" for d in include_dirs]
    is_cuda = entry["file"].endswith(".cu")
    skip = False
    for a in args[1:]:
        if skip:
            skip = False
            continue
        if a in ("-o", "-c"):
            skip = a == "-o"
            continue
        if a.startswith(("--generate-code", "-gencode", "-arch", "--gpu-architecture")):
            continue
        out.append(a)
    if is_cuda:
        out += [f"-arch=compute_{arch}", "-cuda", "-o", os.devnull]
    else:
        out += ["-fsyntax-only"]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build", type=Path, help="a configured build folder (holds compile_commands.json)")
    ap.add_argument("--cuda", default="12.4", help="the CUDA version whose headers to check against (default 12.4)")
    ap.add_argument("--headers", type=Path, nargs="*", help="include folders to use instead of fetching wheels")
    ap.add_argument("--arch", default="75", help="the virtual architecture of the device pass (default 75)")
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "course_cuda_headers")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    o = ap.parse_args()
    db = o.build / "compile_commands.json"
    if not db.is_file():
        print(f"check_cuda_headers: {db}: missing (configure the build first)", file=sys.stderr)
        return 2
    include_dirs = o.headers or fetch_headers(o.cuda, o.cache)
    version = header_version(include_dirs)
    entries = [e for e in json.loads(db.read_text()) if "/_deps/" not in e["file"]]
    print(
        f"check_cuda_headers: {len(entries)} translation units against CUDA {version}'s headers "
        f"({', '.join(map(str, include_dirs))})",
        flush=True,
    )

    def run(e: dict) -> tuple[str, int, str]:
        r = subprocess.run(check_command(e, include_dirs, o.arch), cwd=e["directory"], capture_output=True, text=True)
        return e["file"], r.returncode, r.stdout + r.stderr

    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=o.jobs) as pool:
        for file, rc, text in pool.map(run, entries):
            if rc != 0:
                failed += 1
                errors = [ln for ln in text.splitlines() if "error" in ln][:8]
                print(f"FAIL {file}\n  " + "\n  ".join(errors or text.splitlines()[-8:]))
    print(
        f"check_cuda_headers: {len(entries) - failed} of {len(entries)} compile against CUDA {version}"
        + ("" if not failed else f"; {failed} do not")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
