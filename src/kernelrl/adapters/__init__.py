"""Plugs for the trainers users already run: each turns kernelrl's verdicts (`EvalResult`) into that trainer's
reward, over any `Scorer` (an in-process evaluator, a Ray pool, or the reward service's `Client`).

- `kernelrl.adapters.trl`: `KernelReward` (a TRL reward function) and `KernelToolEnv` (a multi-turn
  `environment_factory` environment).
- `kernelrl.adapters.verl`: `make_compute_score` (verl's `custom_reward_function`).
- `kernelrl.adapters.openenv`: `KernelEnvClient` and `KernelAction` (OpenEnv; imports the openenv package).
- OpenRLHF and slime need no code: they call the service's own routes (docs/serving.md).

Adapters never import the trainer library itself (verl pins an older transformers) nor the sandbox; importing
this package imports nothing heavy.
"""
