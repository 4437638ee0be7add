"""Suites: the built-in one, a KernelBench checkout, or any directory of problem files."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kernelrl.problems.problem import _LEVEL_DIR, Problem, ProblemError, load_problem

BUILTIN_DIR = Path(__file__).parent / "suites" / "builtin"
# the prompts' worked example (kernelrl.prompts): a problem of no suite and no split, so no training or
# held-out problem has its answer in a prompt; generated problems are kept off it like off the test split
PROMPT_EXAMPLE_PROBLEM = Path(__file__).resolve().parent.parent / "examples" / "prompt_example_problem.py"


@dataclass(frozen=True)
class Suite:
    name: str
    root: Path
    problems: tuple[Problem, ...]

    def __iter__(self) -> Iterator[Problem]:
        return iter(self.problems)

    def __len__(self) -> int:
        return len(self.problems)

    def get(self, problem_id: str) -> Problem:
        for problem in self.problems:
            if problem.id == problem_id:
                return problem
        raise KeyError(f"no problem {problem_id!r} in suite {self.name!r}")

    def ids(self) -> list[str]:
        return [p.id for p in self.problems]

    def split(self, name: str) -> tuple[Problem, ...]:
        """The 'train' or 'test' problems (see Problem.split)."""
        if name not in ("train", "test"):
            raise ValueError(f"split must be 'train' or 'test', not {name!r}")
        return tuple(p for p in self.problems if p.split == name)

    def solution_path(self, problem: Problem) -> Path | None:
        """The suite's reference solution for a problem (`solutions/<problem id>.py`), if it ships one."""
        path = self.root / "solutions" / f"{problem.id}.py"
        return path if path.is_file() else None


def _problem_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.glob("*.py") if not p.name.startswith("_"))


def _level_dirs(root: Path) -> list[tuple[int, Path]]:
    found = [(int(m.group(1)), d) for d in root.iterdir() if d.is_dir() and (m := _LEVEL_DIR.match(d.name))]
    return sorted(found)


def _sort_key(problem: Problem) -> tuple:
    # '10_x' after '9_x': numeric prefix first, then the name
    head = problem.name.split("_", 1)[0]
    return (problem.level if problem.level is not None else -1, int(head) if head.isdigit() else 1 << 30,
            problem.name)


def load_suite(location: str | Path | None = None) -> Suite:
    """Load a suite.

    `None` or 'builtin' is the suite shipped in the package. A directory that holds `level{N}/` folders
    (or a `KernelBench/` folder holding them, i.e. a KernelBench checkout) gives ids `level{N}/{stem}`.
    Any other directory is a flat set of problem files with ids equal to their stems.
    """
    if location is None or str(location) == "builtin":
        root, name = BUILTIN_DIR, "builtin"
    else:
        root = Path(location)
        name = root.name
        if not root.is_dir():
            raise ProblemError(f"suite {location!s} is not a directory (give a directory of problem files, "
                               "a KernelBench checkout, or 'builtin')")
    if (root / "KernelBench").is_dir() and _level_dirs(root / "KernelBench"):
        root = root / "KernelBench"
    levels = _level_dirs(root)
    problems: list[Problem] = []
    if levels:
        for level, directory in levels:
            problems.extend(load_problem(f, level=level) for f in _problem_files(directory))
    else:
        problems.extend(load_problem(f, problem_id=f.stem) for f in _problem_files(root))
    if not problems:
        raise ProblemError(f"no problem files (*.py) found in {root}")
    problems.sort(key=_sort_key)
    return Suite(name=name, root=root.resolve(), problems=tuple(problems))
