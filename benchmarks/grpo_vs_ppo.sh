#!/usr/bin/env bash
# Issue 3's comparison: GRPO (both start-state sources) against PPO at the same env steps (1M),
# HalfCheetah-v5 and Hopper-v5, seeds 1-2, all with a deterministic evaluation every 50k steps
# (eval/return) so the curves compare the same quantity. Resumable: run it again to continue.
# Seed 1 of every setting runs before seed 2, so a partial run still covers every setting.
set -eu
ENVS="HalfCheetah-v5 Hopper-v5"
COMMON="--total-steps 1000000 --eval-interval 50000 --workers 1 --no-report"
for seed in 1 2; do
  ppo-control bench --envs $ENVS --algo grpo --start-state reset --group-size 16 --num-envs 32 \
      --gamma 1.0 --num-minibatches 8 --seeds $seed $COMMON --out-dir results/runs/grpo_reset_1m
  ppo-control bench --envs $ENVS --algo grpo --start-state visited --horizon 200 --group-size 8 \
      --num-envs 64 --gamma 1.0 --num-minibatches 8 --seeds $seed $COMMON --out-dir results/runs/grpo_visited_1m
done
# PPO reference runs (the 'fast' preset, same eval grid) are made by benchmarks/ppo_fast_1m.sh
ppo-control plot results/runs/ppo_fast_1m results/runs/grpo_reset_1m results/runs/grpo_visited_1m \
    --group-by algo start_state --curve eval/return --metric eval_return --out results/grpo_vs_ppo.png
