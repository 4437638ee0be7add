"""What `--family-spread` would draw after this run's 16 steps: the curriculum state at step 16
(counts per family rebuilt from the per-problem histories it keeps), 50 draws of 8 problems, and the share of
the drawn problems' families' groups that had a spread of rewards in the run.

    python family_spread_estimate.py GEN_2500_DIR curriculum-step16.json
"""

import json
import sys
from collections import Counter

from kernelrl.problems import load_suite
from kernelrl.train.curriculum import Curriculum, CurriculumConfig

suite, state = load_suite(sys.argv[1]), json.load(open(sys.argv[2]))
train = [p for p in suite if p.split == "train"]
for spread in (False, True):
    config = CurriculumConfig(key="difficulty", skip_solved_after=2, skip_hopeless_after=None,
                              frontier_share=0.5, family_spread=spread)
    curriculum = Curriculum.from_problems(train, config)
    curriculum.load_state_dict(state)
    counts = curriculum.state_dict()["family_groups"]  # [groups with a spread, groups] per family
    drawn = Counter(curriculum.families[pid] for _ in range(50) for pid in curriculum.draw(8))
    spread_draws = sum(n * counts[f][0] / counts[f][1] for f, n in drawn.items() if f in counts)
    share = spread_draws / sum(drawn.values())
    print(f"family_spread={spread}: drawn {dict(drawn.most_common())}")
    print(f"  expected share of groups with a spread: {share:.2f}")
print("in the run:", sum(c[0] for c in counts.values()), "of", sum(c[1] for c in counts.values()),
      "groups in the histories had a spread;", {f: c for f, c in sorted(counts.items())})
