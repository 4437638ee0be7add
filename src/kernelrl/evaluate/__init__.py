"""The evaluator: Problem + candidate (code or completion) -> EvalResult, behind the `Scorer` seam.

Rooms: `config` (EvalConfig), `evaluator` (the public face), `trials` (the sandbox's streamed reports), `verdict`
(pure: facts -> EvalResult), `measure` (timing, baselines, floors), `multi` (one evaluator per device), `scorer`
(the protocol every consumer calls), `slots` (how many sandboxes at once: cores, memory, turns). Sandbox
launching lives in `kernelrl.sandbox.launcher`.
"""

from kernelrl.evaluate.config import RESULT_CACHE_ENV, EvalConfig, EvaluatorError
from kernelrl.evaluate.evaluator import DEADLINE_MESSAGE, Evaluator, evaluate, missed_deadline, no_verdict
from kernelrl.evaluate.measure import speed_of_light_ms
from kernelrl.evaluate.multi import MultiDeviceEvaluator, visible_gpus
from kernelrl.evaluate.scorer import Scorer

__all__ = ["DEADLINE_MESSAGE", "RESULT_CACHE_ENV", "EvalConfig", "EvaluatorError", "Evaluator",
           "MultiDeviceEvaluator", "Scorer", "evaluate", "missed_deadline", "no_verdict", "speed_of_light_ms",
           "visible_gpus"]
