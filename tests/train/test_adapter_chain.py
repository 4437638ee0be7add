"""The chain of adapters a model is trained from: each run directory names the adapter its run started from in
train_config.json, absolute, relative to the working directory, or relative to the run directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("transformers")
from kernelrl.train.model import TrainSetupError, adapter_chain  # noqa: E402


def run_dir(root: Path, name: str, started_from: str | None) -> str:
    (root / name / "adapter").mkdir(parents=True)
    (root / name / "train_config.json").write_text(json.dumps({"adapter": started_from}))
    return str(root / name / "adapter")


def test_a_shipped_run_directory_keeps_its_chain_through_a_relative_name(tmp_path, monkeypatch):
    sft = run_dir(tmp_path, "sft", None)
    grpo = run_dir(tmp_path, "grpo", "../sft/adapter")  # relative to the run directory
    monkeypatch.chdir(tmp_path)  # from here "../sft/adapter" names nothing
    resolved = [Path(p).resolve() for p in (sft, grpo)]
    assert [Path(a).resolve() for a in adapter_chain(grpo)] == resolved
    later = run_dir(tmp_path, "later", grpo)  # absolute, as a run writes it
    assert [Path(a).resolve() for a in adapter_chain(later)] == [*resolved, Path(later).resolve()]


def test_a_relative_name_that_exists_from_the_working_directory_is_read_as_written(tmp_path, monkeypatch):
    sft = run_dir(tmp_path, "runs/sft", None)
    grpo = run_dir(tmp_path, "runs/grpo", "runs/sft/adapter")  # what a run started from the root writes
    monkeypatch.chdir(tmp_path)
    assert adapter_chain(grpo) == ["runs/sft/adapter", grpo] and Path(sft).is_dir()


def test_a_chain_that_loops_is_refused_also_through_relative_names(tmp_path):
    a = run_dir(tmp_path, "a", "../b/adapter")
    run_dir(tmp_path, "b", "../a/adapter")
    with pytest.raises(TrainSetupError, match="starts from itself"):
        adapter_chain(a)
