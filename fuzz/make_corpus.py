#!/usr/bin/env python3
"""Writes the synthetic seeds of the fuzz targets into OUT_DIR/<target>/: small valid inputs of
every format variant the readers accept (PCD ascii / binary / binary_compressed, organized,
padding and multi-count fields; KITTI points and labels; snapshot CSVs; command lines), from
which libFuzzer mutates. scripts/fuzz.sh runs it before each fuzzing run and adds the real
sample files from $COURSE_DATA_DIR beside them; nothing of either is kept in the repository.

usage: make_corpus.py OUT_DIR"""

from __future__ import annotations

import os
import struct
import sys

out = sys.argv[1] if len(sys.argv) == 2 else sys.exit(__doc__)


def put(target: str, name: str, data: bytes | str) -> None:
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def lzf_literals(raw: bytes) -> bytes:
    """LZF stream of literal runs only (valid liblzf format: a run of n+1 bytes starts with n)."""
    out = b""
    for i in range(0, len(raw), 32):
        chunk = raw[i : i + 32]
        out += bytes([len(chunk) - 1]) + chunk
    return out


def pcd(
    fields: list[str],
    sizes: list[int],
    types: str,
    counts: list[int],
    w: int,
    h: int,
    data_kind: str,
    payload: bytes,
    viewpoint: bool = True,
) -> bytes:
    head = (
        "VERSION 0.7\nFIELDS "
        + " ".join(fields)
        + "\nSIZE "
        + " ".join(map(str, sizes))
        + "\nTYPE "
        + " ".join(types)
        + "\nCOUNT "
        + " ".join(map(str, counts))
        + f"\nWIDTH {w}\nHEIGHT {h}\n"
    )
    if viewpoint:
        head += "VIEWPOINT 0 0 0 1 0 0 0\n"
    head += f"POINTS {w * h}\nDATA {data_kind}\n"
    return head.encode() + payload


pts = [(1.5, 2.0, 3.0, 10.0), (-4.0, 0.5, 6.0, 20.0), (7.25, -8.0, 0.0, 30.0)]
put(
    "pcd",
    "ascii_xyzi.pcd",
    pcd(
        ["x", "y", "z", "intensity"],
        [4] * 4,
        "FFFF",
        [1] * 4,
        3,
        1,
        "ascii",
        "".join(f"{a} {b} {c} {i}\n" for a, b, c, i in pts).encode(),
    ),
)
put(
    "pcd",
    "binary_xyzi.pcd",
    pcd(
        ["x", "y", "z", "intensity"],
        [4] * 4,
        "FFFF",
        [1] * 4,
        3,
        1,
        "binary",
        b"".join(struct.pack("<4f", *p) for p in pts),
    ),
)
cols = b"".join(struct.pack("<3f", *[p[k] for p in pts]) for k in range(4))
comp = lzf_literals(cols)
put(
    "pcd",
    "compressed_xyzi.pcd",
    pcd(
        ["x", "y", "z", "intensity"],
        [4] * 4,
        "FFFF",
        [1] * 4,
        3,
        1,
        "binary_compressed",
        struct.pack("<II", len(comp), len(cols)) + comp,
    ),
)
nan = float("nan")
org = [(1, 2, 3), (nan, nan, nan), (0, 0, 0), (4, 5, 6)]
put(
    "pcd",
    "organized_binary.pcd",
    pcd(["x", "y", "z"], [4] * 3, "FFF", [1] * 3, 2, 2, "binary", b"".join(struct.pack("<3f", *p) for p in org)),
)
put(
    "pcd",
    "rgb_uint8_intensity.pcd",
    pcd(
        ["x", "y", "z", "rgb", "intensity"],
        [4, 4, 4, 4, 1],
        "FFFUU",
        [1] * 5,
        2,
        1,
        "binary",
        b"".join(struct.pack("<3fIB", *p[:3], 0x00FF00, 7) for p in pts[:2]),
    ),
)
put(
    "pcd",
    "double_xyz_ascii.pcd",
    pcd(["x", "y", "z"], [8] * 3, "FFF", [1] * 3, 2, 1, "ascii", b"1e3 -2.5 3\n4 5 6\n", viewpoint=False),
)
put(
    "pcd",
    "padding_count.pcd",
    pcd(
        ["x", "y", "z", "_", "normal"],
        [4, 4, 4, 1, 4],
        "FFFUF",
        [1, 1, 1, 4, 3],
        1,
        1,
        "binary",
        struct.pack("<3f", 1, 2, 3) + b"\0" * 4 + struct.pack("<3f", 0, 0, 1),
    ),
)

kitti = b"".join(struct.pack("<4f", *p) for p in pts)
put("kitti", "three_points.bin", struct.pack("<Q", 3) + kitti)
put("kitti", "labels_match.bin", struct.pack("<Q", 4) + struct.pack("<4I", 40, 48, 10 | (7 << 16), 0))
put("kitti", "nan_point.bin", struct.pack("<Q", 2) + struct.pack("<4f", nan, 1, 2, 0) + struct.pack("<4f", 1, 2, 3, 0))

put("snapshot", "seven.csv", "x,y,z,vx,vy,vz,m\n0,0,0,0,0,0,1\n1.5,-2,3e-1,0.1,0.2,0.3,0.5\n")
put("snapshot", "eight_ids.csv", "x,y,z,vx,vy,vz,m,id\n0,0,0,0,0,0,1,0\n1,2,3,4,5,6,0.25,17\n")
put("snapshot", "spaces_crlf.csv", "x, y, z, vx, vy, vz, m\r\n 1 , 2 , 3 , 4 , 5 , 6 , 7 \r\n")

for i, args in enumerate(
    [
        ["--n", "2^20-3,1<<10,1000"],
        ["--block=256", "--eps", "1e-3", "--fast"],
        ["--version", "a,b", "--csv", "out.csv", "--reps", "5"],
        ["--seed", "2^40+7", "--quick", "--sweep"],
        ["--input=x.pcd", "--cold", "--list"],
        ["--eps", "-0.5e+2"],
        ["--profile", "--version", "a,b", "--csv", "p.csv", "--seed", "7"],
    ]
):
    put("cli", f"args{i}", "\0".join(args))
