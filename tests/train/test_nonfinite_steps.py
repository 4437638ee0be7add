"""The run callbacks skip an optimizer step whose gradients are not finite, in a real transformers Trainer on
a tiny randomly initialised causal LM (seconds on a CPU), with a NaN put into one gradient at chosen steps."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402

from kernelrl.train.model import TrainSetupError  # noqa: E402
from kernelrl.train.rundir import NONFINITE_STEPS_IN_A_ROW, make_callbacks, read_metrics  # noqa: E402


def tiny_trainer(tmp_path, callbacks, steps: int):
    from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2)
    model = LlamaForCausalLM(config)
    tokens = [torch.arange(i, i + 8) % 64 for i in range(8)]
    rows = [{"input_ids": t, "labels": t} for t in tokens]
    args = TrainingArguments(output_dir=str(tmp_path / "out"), max_steps=steps, per_device_train_batch_size=2,
                             learning_rate=1e-2, max_grad_norm=1.0, logging_steps=1, save_strategy="no",
                             report_to=[], use_cpu=True, disable_tqdm=True)
    return model, Trainer(model=model, args=args, train_dataset=rows, callbacks=callbacks)


def poison_gradients(model, steps: set[int]) -> list[int]:
    """A NaN in one entry of the embedding's gradient in the given (1-based) steps; returns the step count."""
    seen = [0]

    def hook(grad: torch.Tensor) -> torch.Tensor:
        seen[0] += 1
        if seen[0] in steps:
            grad = grad.clone()
            grad.view(-1)[0] = float("nan")
        return grad

    model.get_input_embeddings().weight.register_hook(hook)
    return seen


def snapshot(model) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.named_parameters()}


def test_a_step_with_a_nan_gradient_is_skipped_and_training_goes_on(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    callbacks = make_callbacks(run_dir, "sft", None, None, -1)
    model, trainer = tiny_trainer(tmp_path, callbacks, steps=2)
    poison_gradients(model, {2})
    # the embedding's own gradient is the first not finite (the hook above put the NaN there); clipping then
    # spread it to every gradient, which the warning does not blame
    blamed = r"optimizer step 2 skipped.*\(first in backward: model\.embed_tokens\.weight\)$"
    with pytest.warns(UserWarning, match=blamed):
        trainer.train()  # step 1 updates, step 2 is skipped
    after_two = snapshot(model)
    assert all(torch.isfinite(v).all() for v in after_two.values())

    model, trainer = tiny_trainer(tmp_path, callbacks, steps=1)
    trainer.train()
    after_one = snapshot(model)
    # the skipped step changed nothing: the weights after two steps are those after one
    assert all(torch.equal(after_one[k], after_two[k]) for k in after_one)

    model, trainer = tiny_trainer(tmp_path, callbacks, steps=4)
    poison_gradients(model, {2})
    trainer.train()
    assert all(torch.isfinite(v).all() for v in model.parameters())
    assert any(not torch.equal(v, after_one[k]) for k, v in model.named_parameters())  # steps 3, 4 trained
    # the gradient hooks end with training: a later backward on the model records nothing
    guard = callbacks[0]
    model(input_ids=torch.arange(8)[None], labels=torch.arange(8)[None]).loss.backward()
    assert guard.hooks == [] and guard.backward == []
    logged = [(r["step"], r["nonfinite_steps_skipped"]) for r in read_metrics(run_dir)
              if "nonfinite_steps_skipped" in r][-4:]
    assert logged == [(1, 0), (2, 1), (3, 0), (4, 0)]


def test_nonfinite_gradients_in_several_steps_in_a_row_stop_the_run(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    model, trainer = tiny_trainer(tmp_path, make_callbacks(run_dir, "sft", None, None, -1), steps=10)
    poison_gradients(model, set(range(1, 11)))
    with pytest.raises(TrainSetupError, match=f"not finite in {NONFINITE_STEPS_IN_A_ROW} optimizer steps"):
        trainer.train()
    assert all(torch.isfinite(v).all() for v in model.parameters())
