#!/usr/bin/env bash
# The 'fast' preset on two more tasks (Walker2d-v5, Ant-v5), 1M steps, seeds 1-3, final deterministic
# evaluation only. Compared with the default preset's suite runs in results/ppo_fast_vs_default.md.
# Resumable: run it again to continue.
set -eu
ppo-control bench --envs Walker2d-v5 Ant-v5 --preset fast --seeds 1 2 3 --total-steps 1000000 \
    --workers ${WORKERS:-2} --no-report --out-dir results/runs/ppo_fast_more_1m
ppo-control plot results/runs/ppo_fast_more_1m results/runs/mujoco_suite/ppo_default/Walker2d-v5__ppo__s{1,2,3} \
    results/runs/mujoco_suite/ppo_default/Ant-v5__ppo__s{1,2,3} --group-by preset \
    --out results/ppo_fast_vs_default.png
