"""The evaluator: Problem + candidate (code or completion) -> EvalResult, behind the `Scorer` seam.

Rooms: `settings` (EvaluatorSettings per evaluator, VerdictSettings per call), `scorer` (the protocol every
consumer calls, `ScorerBase`), `local` (`open_scorer`), `evaluator` (one device), `multi` (one evaluator per
device), `trials` (the sandbox's streamed reports), `verdict` (pure: facts -> EvalResult), `measure` (timing,
baselines, floors), `slots` (how many sandboxes at once: cores, memory, turns), `environment` (the machine's
facts known before the judge starts). Sandbox launching lives in `kernelrl.sandbox.launcher`.
"""

from kernelrl.evaluate.deadlines import DEADLINE_MESSAGE
from kernelrl.evaluate.environment import visible_gpus
from kernelrl.evaluate.evaluator import Evaluator, evaluate
from kernelrl.evaluate.local import open_scorer
from kernelrl.evaluate.measure import speed_of_light_ms
from kernelrl.evaluate.multi import MultiDeviceEvaluator
from kernelrl.evaluate.scorer import EvalItem, Indexed, Scorer, ScorerBase
from kernelrl.evaluate.settings import (
    RESULT_CACHE_ENV,
    EvalConfig,
    EvaluatorError,
    EvaluatorSettings,
    VerdictSettings,
)

__all__ = ["DEADLINE_MESSAGE", "RESULT_CACHE_ENV", "EvalConfig", "EvalItem", "EvaluatorError", "Evaluator",
           "EvaluatorSettings", "Indexed", "MultiDeviceEvaluator", "Scorer", "ScorerBase", "VerdictSettings",
           "evaluate", "open_scorer", "speed_of_light_ms", "visible_gpus"]
