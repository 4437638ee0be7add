"""Training kernel-writing models: SFT warm start and GRPO (single- and two-stage) with LoRA on TRL, the
sandboxed evaluator as the reward (through the `Scorer` seam), a curriculum, and held-out evaluation.

Needs the `train` extra (`pip install 'kernelrl[train]'`): TRL, peft, datasets, transformers, accelerate.
Importing this package does not import them; the run functions do.
"""

from kernelrl.train.config import GRPOConfig, SFTConfig, TrainConfigError
from kernelrl.train.model import TrainSetupError

__all__ = ["GRPOConfig", "SFTConfig", "TrainConfigError", "TrainSetupError"]
