"""Run directories (trajectories in JSONL + SQLite, resumable) and the cross-run kernel database."""

from kernelrl.runs.kerneldb import KernelDB, default_kernel_db_path
from kernelrl.runs.sft import export_sft
from kernelrl.runs.store import RunStore, Step, open_run

__all__ = ["KernelDB", "RunStore", "Step", "default_kernel_db_path", "export_sft", "open_run"]
