"""The path through a handout: each sub-project's exercises in the order they build on each other
(grading/path.toml), with their points (grading/rubric.toml: the versions whose first `requires`
is the exercise), the effort to plan for, the prediction to make before measuring (the exercise
file's own header, so it is written once) and hints. Used by make_handout.py for the handout's
READMEs and by tests/grader/test_path.py, which keeps path, rubric and markers in step."""

from __future__ import annotations

import os
import pathlib
import re
import sys
from typing import Any

import exercise_markers as em

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "grading"))  # judge/
from judge.rubric import tomllib  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def prediction(text: str) -> str:
    """The prediction of an exercise file: its header comment from 'Prediction'/'Predicted' to the end
    of that sentence group (the header's next blank comment line or its end)."""
    header = []
    for line in text.split("\n"):
        if not line.startswith("//"):
            break
        header.append(line[2:].strip())
    joined = " ".join(header)
    m = re.search(r"\b([Pp]redict(?:ion|ed)\b.*?)(?=\s+(?:Measured|Accuracy|The kernel is|Traffic|Usage)\b|$)", joined)
    return (m.group(1)[0].upper() + m.group(1)[1:]).strip() if m else ""


class Path:
    def __init__(
        self,
        steps: dict[str, list[dict[str, Any]]],
        rubric: dict[str, dict[str, Any]],
        exercise_files: dict[str, list[str]],
        root: str,
    ) -> None:
        self.steps = steps  # {sub: [{"exercise", "effort", "hints"}]} in order
        self.rubric = rubric  # the rubric's tables, as tomllib reads them
        self.exercise_files = exercise_files  # {"sub/exercise": [files]} from the solution's markers
        self.root = root

    @classmethod
    def load(cls, root: str = ROOT) -> Path:
        with open(os.path.join(root, "grading", "path.toml"), "rb") as fh:
            steps = tomllib.load(fh)
        with open(os.path.join(root, "grading", "rubric.toml"), "rb") as fh:
            rubric = tomllib.load(fh)
        files = {}
        for d, _, names in os.walk(root):
            rel = os.path.relpath(d, root)
            if rel.split(os.sep)[0] in ("build", ".git", "results", "tests", "data", "docs"):
                continue
            for n in names:
                f = os.path.normpath(os.path.join(rel, n)).replace(os.sep, "/")
                if not f.endswith(em.SOURCE_EXT):
                    continue
                text = pathlib.Path(os.path.join(root, f)).read_text(encoding="utf-8")
                if "// EXERCISE BEGIN" not in text:
                    continue
                for r in em.parse(f, text):
                    for sub, ex in r.owners:
                        if ex:
                            files.setdefault(f"{sub}/{ex}", [])
                            if f not in files[f"{sub}/{ex}"]:
                                files[f"{sub}/{ex}"].append(f)
        return cls(steps, rubric, files, root)

    def versions_of(self, sub: str, exercise: str) -> list[tuple[str, float, float]]:
        """The rubric versions this exercise is the first requirement of: [(version, correct, speed)]."""
        out = []
        for version, rule in self.rubric.get(sub, {}).items():
            if isinstance(rule, dict) and rule.get("requires") and rule["requires"][0] == exercise:
                out.append((version, float(rule.get("correct", 0)), float(rule.get("speed", 0))))
        return out

    def unlocks(self, sub: str, exercise: str) -> list[str]:
        """Rubric versions that also need this exercise (besides their own)."""
        return [
            v
            for v, rule in self.rubric.get(sub, {}).items()
            if isinstance(rule, dict) and exercise in rule.get("requires", [])[1:]
        ]

    def own_file(self, sub: str, exercise: str) -> str:
        """The exercise's own file: the one named after it, else its first file in the sub-project."""
        files = self.exercise_files.get(f"{sub}/{exercise}", [])
        named = [f for f in files if os.path.splitext(os.path.basename(f))[0] == exercise]
        for ext in (".cu", ".cpp"):  # a version file of that name that calls the exercise's code in common/
            if not named and os.path.isfile(os.path.join(self.root, sub, "src", exercise + ext)):
                named = [f"{sub}/src/{exercise}{ext}"]
        inside = [f for f in files if f.startswith(sub + "/")]
        return (named or inside or files or [""])[0]

    def prediction_of(self, sub: str, exercise: str) -> str:
        f = self.own_file(sub, exercise)
        if not f:
            return ""
        return prediction(open(os.path.join(self.root, f), encoding="utf-8").read())

    def render(self, sub: str, exercises: dict[str, dict[str, Any]]) -> str:
        """The README section "Your path" for the exercises of `sub` this handout assigns
        ({"sub/name": {"files": [...]}}), in the path's order."""
        steps = [s for s in self.steps.get(sub, []) if f"{sub}/{s['exercise']}" in exercises]
        total = sum(c + s for st in steps for _, c, s in self.versions_of(sub, st["exercise"]))
        out = [
            "## Your path",
            "",
            f"{len(steps)} exercises, {total:g} points, in the order they build on each other. Before you "
            "measure a step, write down its prediction (below, from the top of its file) in your README's "
            "answers, then check it against your table.",
            "",
            "| # | exercise | files | graded versions (correct + speed points) | effort |",
            "|---|---|---|---|---|",
        ]
        for i, st in enumerate(steps, 1):
            ex = st["exercise"]
            vs = ", ".join(f"`{v}` ({c:g} + {s:g})" for v, c, s in self.versions_of(sub, ex)) or "-"
            files = ", ".join(f"`{f}`" for f in exercises[f"{sub}/{ex}"]["files"])
            out.append(f"| {i} | `{ex}` | {files} | {vs} | {st.get('effort', '')} |")
        out.append("")
        for i, st in enumerate(steps, 1):
            ex = st["exercise"]
            pts = sum(c + s for _, c, s in self.versions_of(sub, ex))
            out += [f"### {i}. `{ex}` ({pts:g} points, about {st.get('effort', '?')})", ""]
            pred = self.prediction_of(sub, ex)
            if pred:
                out += [f"**Predict first.** {pred}", ""]
            later = self.unlocks(sub, ex)
            if later:
                out += ["Later versions build on it: " + ", ".join(f"`{v}`" for v in later) + ".", ""]
            out += [f"- {h}" for h in st.get("hints", [])]
            out.append("")
        return "\n".join(out)


def top_readme(
    template: str,
    subs: list[str],
    included: list[str],
    exercises: dict[str, dict[str, Any]],
    path: Path,
) -> str:
    """The handout's top README: the template with its exercise table."""
    rows = ["| sub-project | exercise | files | points |", "|---|---|---|---|"]
    for sub in subs:
        for st in path.steps.get(sub, []):
            key = f"{sub}/{st['exercise']}"
            if key in exercises:
                pts = sum(c + s for _, c, s in path.versions_of(sub, st["exercise"]))
                rows.append(
                    f"| {sub} | `{st['exercise']}` | "
                    f"{', '.join('`' + f + '`' for f in exercises[key]['files'])} | {pts:g} |"
                )
    solved = [s for s in included if s not in subs]
    note = f"\n\nThis handout also holds {', '.join(solved)}, solved: your assignment builds on it." if solved else ""
    return template.replace("{{EXERCISES}}", "\n".join(rows) + note).replace("{{SUBPROJECTS}}", ", ".join(subs))
