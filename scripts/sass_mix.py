#!/usr/bin/env python3
"""Instruction mix of each nbody force kernel, read from `cuobjdump --dump-sass` output.

usage: cuobjdump --dump-sass build/release/nbody/CMakeFiles/nbody.dir/src/v3_rsqrt_unroll.cu.o ... | scripts/sass_mix.py

Counts are static (every instruction in the kernel once), normalized by the number of MUFU.RSQ:
each interaction takes exactly one reciprocal square root, and the unrolled loops of v3/v4/v6/v8
dominate their kernels, so the normalized counts are the per-interaction cost. v1/v2's precise
1/sqrtf also carries a rarely taken slow-path division (CALL), counted here though not executed.
"""

import collections
import re
import sys

text = sys.stdin.read()
print(f"{'kernel':<34} {'FADD':>5} {'FMUL':>5} {'FFMA':>5} {'MUFU':>5} {'LDS':>5} {'other':>6} {'per interaction':>16}")
for chunk in re.split(r"\n\s*Function : ", text)[1:]:
    name = chunk.split("\n")[0]
    m = re.search(r"(naive|tiled|rsqrt|tuned|warp_split|multi_body)_kernel(ILi(\d+)ELi(\d+)ELi(\d+)E)?", name)
    if not m or ("warp_split" in name and "ILi1E" not in name):
        continue
    ops = collections.Counter()
    for line in chunk.split("\n"):
        mm = re.search(r"/\*[0-9a-f]{4}\*/\s+(@!?U?P\w+\s+)?([A-Z0-9_]+)(\.[A-Z0-9_.]+)?", line)
        if mm:
            ops[mm.group(2) + (".RSQ" if mm.group(2) == "MUFU" and ".RSQ" in (mm.group(3) or "") else "")] += 1
    rsq = ops["MUFU.RSQ"] or 1
    label = m.group(1) + (f"<{m.group(3)}x{m.group(4)}>" if m.group(3) and m.group(1) == "multi_body" else "")
    fp = {k: ops[k] / rsq for k in ("FADD", "FMUL", "FFMA")}
    mufu = sum(v for k, v in ops.items() if k.startswith("MUFU")) / rsq
    lds = ops["LDS"] / rsq
    total = sum(ops.values()) / rsq
    print(
        f"{label:<34} {fp['FADD']:5.2f} {fp['FMUL']:5.2f} {fp['FFMA']:5.2f} {mufu:5.2f} {lds:5.2f} "
        f"{total - sum(fp.values()) - mufu - lds:6.2f} {total:16.2f}"
    )
