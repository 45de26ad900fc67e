"""The course's grader: one module per concern.

rubric     the rubric (points, cases, hidden cases, secret seeds, time limits, the maximum)
assemble   a submission's exercise regions spliced into a clean copy of the instructor's tree
build      the instructor's prebuilt tree, and per student only the exercise translation units
kernels    which kernels a version ran (CUPTI) or references (its objects), and whose they are
run        one version in its own process under time, memory and output limits
score      statuses and points, speed against the reference timed on the same GPU
formats    report.json/md, Gradescope results.json, JUnit XML, grades.csv, the gradebook CSV
schedule   many students over local GPUs, or a Slurm job array and its merge step
cli        scripts/grade.py
"""
