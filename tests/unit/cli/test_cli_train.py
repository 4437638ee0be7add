"""`kernelrl train`'s command line (kernelrl.cli.train): help, bad values and missing paths exit 2 before
anything is loaded or created, an interrupted run exits 130 and says what was kept."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("trl")
pytest.importorskip("peft")

from typer.testing import CliRunner  # noqa: E402

from kernelrl.cli import app  # noqa: E402

TEST_ID = "level0/11_where_mask"  # a test-split problem of the builtin suite


def invoke(*args: str):
    return CliRunner().invoke(app, ["train", *map(str, args)], env={"COLUMNS": "200"})


def test_cli_help_documents_the_options():
    top = invoke("--help")
    assert top.exit_code == 0, top.output
    assert all(command in top.output for command in ("sft", "grpo", "two-stage"))
    expected = {
        "sft": ("--run-dir", "--config", "--data", "--max-length", "--merge", "--lora-r", "--heldout-every",
                "Passes over the SFT data"),
        "grpo": ("--run-dir", "--config", "--reward", "--num-generations", "--curriculum", "--eval-device",
                 "Completions per prompt (the GRPO group)"),
        "two-stage": ("--run-dir", "--config", "--kernels", "--preset", "--reward", "known-correct kernels"),
    }
    for command, needles in expected.items():
        result = invoke(command, "--help")
        assert result.exit_code == 0, result.output
        for needle in needles:
            assert needle in result.output, (command, needle)
    assert "--stage" not in invoke("grpo", "--help").output  # set by two-stage, not an option


def test_cli_bad_values_exit_2_and_leave_no_run_directory(tmp_path):
    run_dir = tmp_path / "run"
    bad_file = tmp_path / "bad.toml"
    bad_file.write_text("lora_r = 4\nno_such_setting = 1\n")
    cases = [
        (("sft", "--run-dir", run_dir, "--lora-r", "0"), "lora_r"),
        (("grpo", "--run-dir", run_dir, "--reward", "no_such_reward"), "unknown reward 'no_such_reward'"),
        (("two-stage", "--run-dir", run_dir, "--num-generations", "1"), "num_generations must be >= 2"),
        (("grpo", "--run-dir", run_dir, "--prompts-per-step", "3", "--num-generations", "2",
          "--micro-batch", "4"),
         "micro_batch must divide the step's 6 completions"),
        (("sft", "--run-dir", run_dir, "--gpu-memory-fraction", "1.5"),
         "gpu_memory_fraction must be in (0, 1]"),
        (("sft", "--run-dir", run_dir, "--config", bad_file),
         "unknown SFTConfig setting(s): no_such_setting"),
        (("sft", "--run-dir", run_dir, "--config", tmp_path / "missing.toml"), "cannot read config"),
        (("sft", "--run-dir", run_dir, "--problems", TEST_ID, "--eval-device", "cpu"), "other split"),
    ]
    for args, message in cases:
        result = invoke(*args)
        assert result.exit_code == 2, (args, result.output)
        assert message in " ".join(result.output.split()), (args, result.output)
        assert not run_dir.exists(), args


def test_cli_checks_run_dir_and_paths_before_showing_or_loading_anything(tmp_path, monkeypatch):
    """A missing --run-dir, model path or adapter: one plain error line, exit 2, the settings not printed,
    nothing loaded or created."""
    from kernelrl.train.session import Session

    def no_loading(*args, **kwargs):
        raise AssertionError("training set-up started")

    monkeypatch.setattr(Session, "open", no_loading)
    run_dir, missing = tmp_path / "run", tmp_path / "no" / "model.gguf"
    cases = [
        (("sft",), "--run-dir is required"),
        (("grpo", "--max-steps", "1"), "--run-dir is required"),
        (("two-stage",), "--run-dir is required"),
        (("sft", "--run-dir", run_dir, "--model", missing), f"--model {missing}: no such file or directory"),
        (("grpo", "--run-dir", run_dir, "--model", "./no/such/model"),
         "--model ./no/such/model: no such file"),
        (("two-stage", "--run-dir", run_dir, "--model", missing), f"--model {missing}: no such file"),
        (("grpo", "--run-dir", run_dir, "--adapter", tmp_path / "no-adapter"),
         "no-adapter: no such directory"),
        (("sft", "--run-dir", run_dir, "--model", Path(__file__)), "is a file but not a .gguf model"),
    ]
    for args, message in cases:
        result = invoke(*args)
        assert result.exit_code == 2, (args, result.output)
        text = " ".join(result.output.split())
        assert text.startswith("error: ") and message in text, (args, result.output)
        # the settings not shown
        assert "Traceback" not in result.output and '"lora_r"' not in result.output, args
        assert not run_dir.exists(), args


def test_cli_interrupted_training_exits_130_and_says_what_was_kept(tmp_path, monkeypatch):
    import kernelrl.train.sft as sft_module

    def interrupted(config):
        raise KeyboardInterrupt

    monkeypatch.setattr(sft_module, "run_sft", interrupted)
    result = invoke("sft", "--run-dir", tmp_path / "run")
    assert result.exit_code == 130, result.output
    text = " ".join(result.output.split())
    kept = "interrupted: the last finished step's checkpoint and adapter (once a step finished) are in"
    assert kept in text
    assert "Traceback" not in result.output
