# KernelBench levels 1 and 2 (ScalingIntelligence/KernelBench@423217d, KernelBench/level{1,2}/*.py, unmodified)
# audited on one H200, one level after the other; audit-level{1,2}.jsonl are the JSON lines as printed
for lv in level1 level2; do
  kernelrl audit --suite KernelBench --only $lv/ --device cuda --json > audit-$lv.jsonl
done
