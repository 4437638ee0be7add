"""Find the candidate's code in an LLM completion."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from kernelrl.pyparse import parse_python

# ``` or ~~~ fences with an optional language tag; an unterminated last fence runs to the end (truncated output)
_FENCE = re.compile(r"^[ \t]*(```|~~~)[ \t]*([\w+.-]*)[^\n]*\n(.*?)(?:^[ \t]*\1[ \t]*$|\Z)", re.S | re.M)
_DEFINES_MODELNEW = re.compile(r"^\s*class\s+ModelNew\b", re.M)
_NOT_PYTHON = {"cpp", "c++", "cuda", "c", "cu", "bash", "sh", "shell", "text", "json", "yaml", "console"}


@dataclass(frozen=True)
class Extraction:
    code: str | None
    error: str | None  # why no code was found (a format error), else None
    blocks_found: int


def _defines_modelnew(code: str) -> bool:
    try:
        tree = parse_python(code)
    except SyntaxError:
        return bool(_DEFINES_MODELNEW.search(code))  # keep it: the syntax error is the feedback
    return any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in tree.body)


def extract_code(completion: str) -> Extraction:
    """Pick the fenced block that defines `class ModelNew` (the last such block: models revise).

    A completion without fences counts as code when it itself defines ModelNew.
    """
    blocks = [(m.group(2).lower(), m.group(3)) for m in _FENCE.finditer(completion)]
    candidates = [code for lang, code in blocks if lang not in _NOT_PYTHON and _defines_modelnew(code)]
    if candidates:
        return Extraction(candidates[-1].strip("\n") + "\n", None, len(blocks))
    if not blocks and _defines_modelnew(completion):
        return Extraction(completion.strip("\n") + "\n", None, 0)
    if blocks:
        error = (f"none of the {len(blocks)} code blocks defines `class ModelNew`; answer with one ```python "
                 "block containing the complete module, including class ModelNew(nn.Module)")
    else:
        error = ("no code block found; answer with one ```python block containing the complete module, "
                 "including class ModelNew(nn.Module)")
    return Extraction(None, error, len(blocks))
