#!/usr/bin/env python3
"""A version name is typed once, in its registry: the names each driver lists with
--list must not appear as string literals in any driver (*/app/*.cpp), which find versions by
role and by the registry's fields instead.

usage: registry_names.py --root REPO DRIVER_BINARY...
"""

import argparse
import glob
import os
import re
import subprocess
import sys
from pathlib import Path


def listed_names(binary):
    out = subprocess.run([binary, "--list"], capture_output=True, text=True, check=True).stdout
    names = set()
    for line in out.splitlines():
        cols = line.split()
        if len(cols) >= 2 and cols[1] != "name":
            names.add(cols[1])
    return names


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("drivers", nargs="+")
    a = ap.parse_args()
    names = set()
    for d in a.drivers:
        found = listed_names(d)
        if not found:
            print(f"{d} --list printed no versions")
            return 1
        names |= found
    problems = []
    for path in sorted(glob.glob(os.path.join(a.root, "*", "app", "*.cpp"))):
        text = Path(path).read_text()
        for n in sorted(names):
            for m in re.finditer(r'"' + re.escape(n) + r'"', text):
                line = text.count("\n", 0, m.start()) + 1
                problems.append(
                    f'{os.path.relpath(path, a.root)}:{line}: version name "{n}" typed outside its registry'
                )
    print(
        f"{len(names)} version names from {len(a.drivers)} registries; "
        f"{len(glob.glob(os.path.join(a.root, '*', 'app', '*.cpp')))} driver files checked"
    )
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
