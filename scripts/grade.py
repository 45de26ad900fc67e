#!/usr/bin/env python3
"""Grades student checkouts against the instructor's tree. The judge itself is grading/judge/
(runner_*: what builds and runs the student's code, in a sandbox; checker_*: what decides);
`scripts/grade.py --help` lists the options, the top README the workflow."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "grading"))

from judge.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
