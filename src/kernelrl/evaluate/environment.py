"""What the judge reported about this machine before, so that answers which need no worker (a cached verdict,
a completion without code) do not wait for the judge to start (~4-5 s of `import torch`).

The judge's `Environment` is a function of facts this process can read cheaply without importing torch: the
device asked for, the GPUs listed (CUDA_VISIBLE_DEVICES or `nvidia-smi -L`), the installed torch and triton
distributions, the Python build and kernelrl's version. Those facts are the fingerprint; the environment the
judge last reported under it is remembered in the cache directory. A fingerprint seen for the first time (a
new machine, an upgraded torch) gives nothing, and the call waits for the judge as before.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
from dataclasses import asdict
from importlib import metadata
from pathlib import Path

from kernelrl._version import __version__
from kernelrl.results import Environment


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


class KnownEnvironments:
    FILE = "environments.json"

    def __init__(self, cache_dir: Path, device: str) -> None:
        self._path = Path(cache_dir) / self.FILE
        self._device = device
        self._fingerprint: str | None = None
        self._remembered: Environment | None = None
        self._lock = threading.Lock()

    def fingerprint(self) -> str:
        if self._fingerprint is None:
            facts = {"device": self._device, "gpus": visible_gpus() if self._device != "cpu" else [],
                     "gpu_names": _gpu_names() if self._device != "cpu" else [],
                     "torch": _version("torch"), "triton": _version("triton"), "python": sys.version,
                     "executable": sys.executable, "kernelrl": __version__}
            self._fingerprint = hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()
        return self._fingerprint

    def predicted(self) -> Environment | None:
        """The environment the judge reported under this fingerprint before, or None."""
        with self._lock:
            if self._remembered is not None:
                return self._remembered
            try:
                stored = json.loads(self._path.read_text()).get(self.fingerprint())
                return Environment(**stored) if isinstance(stored, dict) else None
            except (OSError, ValueError, TypeError):
                return None

    def remember(self, env: Environment) -> None:
        """Store what the judge reported (once per evaluator; the file is replaced atomically)."""
        with self._lock:
            if self._remembered == env:
                return
            self._remembered = env
            try:
                known = json.loads(self._path.read_text()) if self._path.exists() else {}
                if not isinstance(known, dict):
                    known = {}
            except (OSError, ValueError):
                known = {}
            known[self.fingerprint()] = {k: v for k, v in asdict(env).items() if k != "isolation"}
            try:
                self._path.parent.mkdir(parents=True, exist_ok=True)
                tmp = self._path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
                tmp.write_text(json.dumps(known, sort_keys=True))
                os.replace(tmp, self._path)
            except OSError:
                pass  # a read-only cache directory: calls wait for the judge, nothing else changes


def _nvidia_smi_list() -> list[str]:
    """`nvidia-smi -L`'s GPU lines, [] without the tool."""
    tool = shutil.which("nvidia-smi")
    if tool is None:
        return []
    try:
        out = subprocess.run([tool, "-L"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line for line in out.splitlines() if line.startswith("GPU ")]


def _gpu_names() -> list[str]:
    """GPU model names (what the judge reports as the device name)."""
    return [line.split("(UUID")[0].strip() for line in _nvidia_smi_list()]


def visible_gpus() -> list[str]:
    """`cuda:N` for each GPU this process may use (CUDA_VISIBLE_DEVICES, else `nvidia-smi -L`), without
    importing torch (which could initialize CUDA in the verdict process)."""
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        return [f"cuda:{d.strip()}" for d in listed.split(",") if d.strip().isdigit()]
    return [f"cuda:{n}" for n in range(len(_nvidia_smi_list()))]
