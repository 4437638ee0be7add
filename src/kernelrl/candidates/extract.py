"""Find the candidate's code in an LLM completion: the one extraction path (`Candidate.from_text`) that the
evaluator, the CLI, the agent and trainers share."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Literal

from kernelrl.pyparse import parse_python

# ``` or ~~~ fences with an optional language tag; an unterminated last fence runs to the end (truncated
# output: group 4, the closing fence, is then None)
_FENCE = re.compile(r"^[ \t]*(```|~~~)[ \t]*([\w+.-]*)[^\n]*\n(.*?)(?:(^[ \t]*\1[ \t]*$)|\Z)", re.S | re.M)
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

    A completion without fences counts as code when it itself defines ModelNew. A block that is never closed
    (the completion ends inside it: cut off by a token limit) is not code: its module may stop anywhere, even
    at a line that parses (a `forward` without its kernel launch or return), so no verdict on it, static rules
    included, would be about the code the model meant; it is a format error that says the answer looks
    truncated.
    """
    blocks = [(m.group(2).lower(), m.group(3), m.group(4) is not None) for m in _FENCE.finditer(completion)]
    candidates = [(code, closed) for lang, code, closed in blocks
                  if lang not in _NOT_PYTHON and _defines_modelnew(code)]
    if candidates:
        code, closed = candidates[-1]
        if not closed:
            return Extraction(None, TRUNCATED, len(blocks))
        return Extraction(code.strip("\n") + "\n", None, len(blocks))
    if not blocks and _defines_modelnew(completion):
        return Extraction(completion.strip("\n") + "\n", None, 0)
    if blocks:
        error = (f"none of the {len(blocks)} code blocks defines `class ModelNew`; answer with one ```python "
                 "block containing the complete module, including class ModelNew(nn.Module)")
    else:
        error = ("no code block found; answer with one ```python block containing the complete module, "
                 "including class ModelNew(nn.Module)")
    return Extraction(None, error, len(blocks))


TRUNCATED = ("the completion looks truncated: its code block defining ModelNew is never closed (the answer "
             "was cut off, e.g. by the token limit, so the module is incomplete); answer with one complete "
             "```python block, closed with ```, and keep the explanation short")


TextKind = Literal["auto", "code", "completion"]
TEXT_KINDS = ("auto", "code", "completion")


def is_completion(text: str) -> bool:
    """Whether `text` is an LLM completion rather than a Python module. Any text that parses as Python is code
    (a code fence never parses); anything else (prose, fenced blocks, a truncated answer) is a completion."""
    try:
        parse_python(text)
    except (SyntaxError, ValueError):
        return True
    return False


@dataclass(frozen=True)
class Candidate:
    """What a policy (or a user) handed in, and the code the evaluator runs from it.

    `code` is None when a completion holds no block that defines `ModelNew`, or when that block is never
    closed (a truncated answer); `error` then says why (the `format_error` verdict's feedback), and nothing
    needs a sandbox.
    """

    text: str
    code: str | None
    error: str | None = None
    from_completion: bool = False

    @classmethod
    def from_text(cls, text: str, kind: TextKind = "auto") -> Candidate:
        """`kind`: 'code' (a module, used as is), 'completion' (the fenced block that defines ModelNew), or
        'auto' (code when the text parses as Python, else a completion)."""
        if kind not in TEXT_KINDS:
            raise ValueError(f"kind must be one of {TEXT_KINDS}, not {kind!r}")
        if not isinstance(text, str):
            raise TypeError(f"a candidate is text (code or a completion), not {type(text).__name__}")
        if kind == "code" or (kind == "auto" and not is_completion(text)):
            return cls(text=text, code=text)
        extraction = extract_code(text)
        return cls(text=text, code=extraction.code, error=extraction.error, from_completion=True)
