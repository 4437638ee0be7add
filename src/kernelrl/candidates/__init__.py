"""Candidates: code extraction from completions and static facts about candidate source."""

from kernelrl.candidates.extract import (
           TEXT_KINDS,
           Candidate,
           Extraction,
           TextKind,
           extract_code,
           is_completion,
)
from kernelrl.candidates.static import StaticReport, analyze

__all__ = ["TEXT_KINDS", "Candidate", "Extraction", "StaticReport", "TextKind", "analyze", "extract_code",
           "is_completion"]
