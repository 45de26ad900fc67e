#!/usr/bin/env python3
"""Grades student checkouts against the instructor's tree (the package scripts/grader/ does the
work; `scripts/grade.py --help` lists the options, the top README the workflow)."""

import sys

from grader.cli import main

if __name__ == "__main__":
    sys.exit(main())
