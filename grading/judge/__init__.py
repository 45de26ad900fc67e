"""The course's judge: one room, two trust levels, told apart by the file names.

runner_*   what builds and runs a student's code, always inside the sandbox
  runner_sandbox  bubblewrap: own namespaces, a read-only view of what the step needs, the GPU's
                  device nodes, an allow-listed environment, resource limits, nothing left behind
  runner_build    the instructor's prebuilt tree, and per student only the exercise translation units
  runner_run      one case of one version in its own sandboxed process, under limits
checker_*  what decides, from outside the sandbox, with instructor code the student's is never
           compiled or linked with
  checker_splice  a submission's STUDENT blocks, spliced into a clean copy of the instructor's tree
  checker_blocks  what a block may hold (macros end with it, no includes but the system's, no asm, ...)
  checker_kernels which kernels a version ran (CUPTI) or references (its objects), whose they are
  checker_symbols the object rules: no call into the checker or out of the process, no definition
                  of the harness's names, no static constructors
  checker_score   statuses and points, speed against the reference timed on the same GPU
the rest   the rubric, the typed results (model), the report formats, the scheduler over GPUs and
           Slurm, the grader's own inputs and state (intake, integrity), the CLI, the test class
"""

import os
import sys

# the course's scripts (course_csv, exercise_markers): the judge reads the drivers' CSV and the
# exercise markers with the same code the course does, whichever of its modules is imported first
_SCRIPTS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "scripts")
if _SCRIPTS not in sys.path:
    sys.path.insert(0, _SCRIPTS)
