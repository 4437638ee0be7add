"""Extension points a user reaches without editing kernelrl (kernelrl.plugins): a reward preset, a policy and
a static rule, each from a module of their own (written to a temporary directory and imported from there), and
each from an installed package's entry point."""

from __future__ import annotations

import pytest
from conftest import example

from kernelrl import EvalResult, Stage, Status, VerdictSettings
from kernelrl.candidates.rules import RULES_BY_ID, Rule, analyze_rules, resolve_rules
from kernelrl.policies import make_policy, register_policy
from kernelrl.rewards import REWARDS, get_reward, parse_reward_spec, register_reward, reward_minimum

USER_MODULE = '''
import ast

from kernelrl.candidates.rules import Rule
from kernelrl.policies import Completion


def double_or_nothing(result, scale=2.0):
    return scale if result.correct else -scale

double_or_nothing.reward_minimum = lambda scale=2.0, **_: -scale


def no_minimum(result):
    return 1.0


def _cheat_functions(ctx):
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.FunctionDef) and node.name == "cheat":
            yield node.lineno, "defines cheat()"


NO_CHEAT = Rule("user-no-cheat", "reject", "functions named cheat are not allowed here",
                check=_cheat_functions)
RULES = [NO_CHEAT]
NOT_A_RULE = 42


class EchoPolicy:
    name = "echo"

    def __init__(self, answer="```python\\nprint(1)\\n```", **options):
        self.answer, self.options = answer, options

    def generate(self, messages, n=1, **kwargs):
        return [Completion(text=self.answer) for _ in range(n)]
'''

CORRECT = EvalResult(status=Status.CORRECT, stage=Stage.DONE, problem_id="p", message="ok")
WRONG = EvalResult(status=Status.WRONG_OUTPUT, stage=Stage.CORRECTNESS, problem_id="p", message="no")


@pytest.fixture
def usermod(tmp_path, monkeypatch):
    (tmp_path / "kernelrl_user_ext.py").write_text(USER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    return "kernelrl_user_ext"


def test_a_reward_function_by_module_spec(usermod):
    fn = get_reward(f"{usermod}:double_or_nothing", scale=3.0)
    assert (fn(CORRECT), fn(WRONG)) == (3.0, -3.0)
    assert reward_minimum(f"{usermod}:double_or_nothing", scale=3.0) == -3.0
    assert parse_reward_spec(f"{usermod}:double_or_nothing:scale=3") == (f"{usermod}:double_or_nothing",
                                                                         {"scale": 3.0})
    assert parse_reward_spec(f"{usermod}:double_or_nothing") == (f"{usermod}:double_or_nothing", {})
    assert parse_reward_spec("makora:delta=1.5") == ("makora", {"delta": 1.5})  # built-ins unchanged
    with pytest.raises(ValueError, match="declares no minimum"):
        reward_minimum(f"{usermod}:no_minimum")
    with pytest.raises(ValueError, match="has no 'missing'"):
        get_reward(f"{usermod}:missing")
    with pytest.raises(ValueError, match="cannot import"):
        get_reward("kernelrl_no_such_module:fn")
    with pytest.raises(ValueError, match="no parameter"):
        get_reward(f"{usermod}:double_or_nothing", delta=1.0)


def test_a_registered_reward_is_used_by_name_also_by_the_agent(usermod, monkeypatch):
    import importlib

    from kernelrl.agent import AgentConfig

    monkeypatch.setattr(REWARDS.plugins, "_registered", {})  # this test's registrations end with it
    module = importlib.import_module(usermod)
    register_reward("double", module.double_or_nothing, minimum=-2.0)
    assert get_reward("double")(CORRECT) == 2.0 and reward_minimum("double") == -2.0
    assert AgentConfig(reward="double").reward == "double"  # validated against the registry
    with pytest.raises(ValueError, match="must be non-empty, without ':'"):
        register_reward("bad:name", module.double_or_nothing, minimum=0.0)
    with pytest.raises(ValueError, match="built-in reward"):
        register_reward("makora", module.double_or_nothing, minimum=0.0)
    with pytest.raises(ValueError, match="unknown reward 'nope'.*double"):
        get_reward("nope")


def test_a_policy_by_module_spec_and_by_registered_kind(usermod, monkeypatch):
    import importlib

    from kernelrl.policies import POLICIES

    monkeypatch.setattr(POLICIES, "_registered", {})
    policy = make_policy(f"{usermod}:EchoPolicy", temperature_hint=0.5)
    assert [c.text for c in policy.generate([], n=2)] == ["```python\nprint(1)\n```"] * 2
    assert policy.options == {"temperature_hint": 0.5}
    assert make_policy(f"{usermod}:EchoPolicy:hello").answer == "hello"
    register_policy("echo", importlib.import_module(usermod).EchoPolicy)
    assert make_policy("echo:hi").answer == "hi"
    with pytest.raises(ValueError, match="'openai' is a built-in policy kind"):
        register_policy("openai", importlib.import_module(usermod).EchoPolicy)
    with pytest.raises(ValueError, match="has no 'Missing'"):
        make_policy(f"{usermod}:Missing")
    with pytest.raises(ValueError, match="unknown policy.*echo:ARG"):
        make_policy("nope:x")


CHEATING = example("relu_triton.py") + "\n\ndef cheat():\n    return None\n"


def test_a_static_rule_from_a_user_module(usermod):
    findings = [f for f in analyze_rules(CHEATING, extra_rules=[f"{usermod}:NO_CHEAT"])
                if f.rule == "user-no-cheat"]
    line = CHEATING.splitlines().index("def cheat():") + 1
    assert [(f.policy, f.line, f.detail) for f in findings] == [("reject", line, "defines cheat()")]
    assert analyze_rules(CHEATING, extra_rules=[f"{usermod}:RULES"]) == analyze_rules(
        CHEATING, extra_rules=[f"{usermod}:NO_CHEAT"])
    assert not [f for f in analyze_rules(CHEATING) if f.rule == "user-no-cheat"]  # only when asked for
    warned = analyze_rules(CHEATING, {"user-no-cheat": "warn"}, [f"{usermod}:NO_CHEAT"])
    assert [f.policy for f in warned if f.rule == "user-no-cheat"] == ["warn"]
    for spec, error in ((f"{usermod}:NOT_A_RULE", "neither a Rule"), (f"{usermod}:missing", "has no"),
                        ("kernelrl_no_such_module:X", "cannot import"), ("no-colon", "looks like")):
        with pytest.raises(ValueError, match=error):
            resolve_rules([spec])
    clash = dict(vars(RULES_BY_ID["ffi"]))
    with pytest.raises(ValueError, match="built-in rule's"):
        resolve_rules([Rule(**clash)])


def test_a_user_rule_rejects_through_the_evaluator(cpu_evaluator, usermod, suite):
    """End to end: VerdictSettings(extra_rules=...) turns the user's rule into a hack_detected verdict before
    anything runs; the same candidate without the rule is correct."""
    relu = suite.get("level0/1_relu")
    result = cpu_evaluator.evaluate(relu, CHEATING,
                                    verdict=VerdictSettings(trials=2, extra_rules=(f"{usermod}:NO_CHEAT",)))
    assert result.status is Status.HACK_DETECTED and result.stage is Stage.STATIC
    assert "user-no-cheat" in result.message
    assert cpu_evaluator.evaluate(relu, CHEATING, verdict=VerdictSettings(trials=2)).status is Status.CORRECT
    with pytest.raises(ValueError, match="cannot import"):
        VerdictSettings(extra_rules=("kernelrl_no_such_module:RULES",))


def test_rule_checks_are_one_function_per_rule():
    names = [rule.check.__name__ for rule in RULES_BY_ID.values()]
    assert len(set(names)) == len(names)


ENTRY_POINTS = """
[kernelrl.rewards]
ep_double = kernelrl_user_ext:double_or_nothing

[kernelrl.policies]
ep_echo = kernelrl_user_ext:EchoPolicy

[kernelrl.rules]
ep_no_cheat = kernelrl_user_ext:RULES
ep_broken = kernelrl_user_ext:NOT_A_RULE
"""


@pytest.fixture
def installed(usermod, tmp_path, monkeypatch):
    """The user module as an installed package that declares entry points (a dist-info beside it on sys.path,
    what `pip install` writes), and registries that forget what this test loaded."""
    from kernelrl.candidates.rules import RULE_PLUGINS
    from kernelrl.policies import POLICIES

    dist = tmp_path / "kernelrl_user_ext-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: kernelrl-user-ext\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(ENTRY_POINTS)
    for registry in (REWARDS.plugins, POLICIES, RULE_PLUGINS):
        monkeypatch.setattr(registry, "_registered", {})
    return usermod


def test_a_reward_a_policy_and_a_rule_from_an_installed_packages_entry_points(installed):
    from kernelrl.policies import POLICIES

    assert "ep_double" in REWARDS.names() and "ep_echo" in POLICIES.names()
    assert get_reward("ep_double", scale=3.0)(CORRECT) == 3.0
    assert reward_minimum("ep_double", scale=3.0) == -3.0
    assert parse_reward_spec("ep_double:scale=2") == ("ep_double", {"scale": 2.0})
    assert make_policy("ep_echo:hi").answer == "hi"
    assert [f.rule for f in analyze_rules(CHEATING, extra_rules=["ep_no_cheat"]) if f.policy == "reject"] == \
        ["user-no-cheat"]
    with pytest.raises(ValueError, match="neither a Rule"):
        resolve_rules(["ep_broken"])
    with pytest.raises(ValueError, match="no rule plugin of that name"):
        resolve_rules(["ep_missing"])
