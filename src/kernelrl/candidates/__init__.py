"""Candidates: code extraction from completions and static facts about candidate source."""

from kernelrl.candidates.extract import Extraction, extract_code
from kernelrl.candidates.static import StaticReport, analyze

__all__ = ["Extraction", "StaticReport", "analyze", "extract_code"]
