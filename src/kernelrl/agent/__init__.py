"""The multi-turn agent (refinement and evolutionary search) and the benchmark driver."""

from kernelrl.agent.loop import MODES, Agent, AgentConfig, ProblemOutcome, best_step

__all__ = ["MODES", "Agent", "AgentConfig", "ProblemOutcome", "best_step"]
