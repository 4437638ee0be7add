"""The verdict side stays light (kernelrl.evaluate, the CLI)."""

from __future__ import annotations

import sys


def test_verdict_process_does_not_import_torch():
    """The verdict side (API, CLI) stays light and never loads the framework candidates run on."""
    import subprocess

    code = ("import sys, kernelrl, kernelrl.cli, kernelrl.evaluate, kernelrl.sandbox.launcher; "
            "sys.exit('torch' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
