#!/usr/bin/env python3
"""Grades student checkouts against the instructor's tree (the package scripts/grader/ does the
work; `scripts/grade.py --help` lists the options, the top README the workflow)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from grader.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
