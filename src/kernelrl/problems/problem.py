"""Problems in KernelBench format, loaded without executing them (AST only) so listing a suite is cheap."""

from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from kernelrl.pyparse import parse_python

REQUIRED_NAMES = ("Model", "get_inputs", "get_init_inputs")
METADATA_NAME = "METADATA"  # optional module-level dict literal: {"tags": [...], "level": N, ...}
_LEVEL_DIR = re.compile(r"^level(\d+)$")


class ProblemError(ValueError):
    """A file or directory is not a loadable KernelBench-format problem (suite)."""


def family_of_name(name: str) -> str:
    """A problem's op family by its file name alone ('23_softmax' -> 'softmax'), for one without METADATA."""
    return name.split("_", 1)[-1].lower()


@dataclass(frozen=True)
class Problem:
    id: str  # e.g. 'level1/23_softmax'
    name: str  # file stem, e.g. '23_softmax'
    level: int | None
    source: str
    path: Path
    sha256: str  # of the source text: the identity used by caches and results
    tags: tuple[str, ...] = ()
    metadata: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def family(self) -> str:
        """Op family (METADATA "family", else the file name without its number): the unit of the split."""
        return str(self.metadata.get("family") or family_of_name(self.name))

    @property
    def difficulty(self) -> int | None:
        value = self.metadata.get("difficulty")
        return int(value) if value is not None else None

    @property
    def split(self) -> str:
        """'train' or 'test', stable: decided by the family's hash (about 1 in 5 families is test), so near-
        duplicates (same family) never straddle the split. METADATA "split" overrides."""
        if self.metadata.get("split") in ("train", "test"):
            return self.metadata["split"]
        return "test" if hashlib.sha256(self.family.encode()).digest()[0] % 5 == 0 else "train"


def _module_metadata(tree: ast.Module, path: Path) -> dict:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == METADATA_NAME for t in node.targets
        ):
            try:
                value = ast.literal_eval(node.value)
            except ValueError as exc:
                raise ProblemError(f"{path}: {METADATA_NAME} must be a literal dict ({exc})") from None
            if not isinstance(value, dict):
                raise ProblemError(f"{path}: {METADATA_NAME} must be a dict")
            return value
    return {}


def load_problem(path: str | Path, problem_id: str | None = None, level: int | None = None) -> Problem:
    """Load one problem file; `problem_id` defaults to `level{N}/{stem}` when the level is known."""
    path = Path(path)
    try:
        source = path.read_text()
    except OSError as exc:
        raise ProblemError(f"cannot read problem file {path}: {exc.strerror}") from None
    try:
        tree = parse_python(source, filename=str(path))
    except SyntaxError as exc:
        raise ProblemError(f"{path}:{exc.lineno}: syntax error in problem file: {exc.msg}") from None
    defined = {
        node.name
        for node in tree.body
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
    }
    missing = [name for name in REQUIRED_NAMES if name not in defined]
    if missing:
        raise ProblemError(
            f"{path} is not a KernelBench-format problem: it does not define {', '.join(missing)} "
            "(expected class Model(nn.Module), get_inputs() and get_init_inputs())"
        )
    metadata = _module_metadata(tree, path)
    if level is None:
        match = _LEVEL_DIR.match(path.parent.name)
        level = int(match.group(1)) if match else metadata.get("level")
    if problem_id is None:
        problem_id = f"level{level}/{path.stem}" if level is not None else path.stem
    return Problem(
        id=problem_id,
        name=path.stem,
        level=level,
        source=source,
        path=path.resolve(),
        sha256=hashlib.sha256(source.encode()).hexdigest(),
        tags=tuple(metadata.get("tags", ())),
        metadata=metadata,
    )
