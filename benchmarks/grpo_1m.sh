#!/usr/bin/env bash
# Issue 12: the two leading GRPO settings of the 300k pilot (benchmarks/grpo_pilot.sh, results/grpo_pilot/)
# at 1M steps, seeds 1-3, HalfCheetah-v5 and Hopper-v5, one run at a time; deterministic evaluation every
# 50k steps (GRPO's default). Seed-major order, so a partial run covers every setting. Resumable.
# Compare with PPO's default preset: results/runs/mujoco_suite/ppo_default (benchmarks/mujoco_suite.py).
set -eu
OUT=results/runs/grpo_1m
COMMON="--algo grpo --grpo-advantage per_step --group-size 8 --num-envs 64 --gamma 0.95 --init-log-std -0.5
        --total-steps 1000000 --eval-interval 50000 --workers 1 --no-report --no-progress --out-dir $OUT"
for seed in ${SEEDS:-1 2 3}; do
  for env in HalfCheetah-v5 Hopper-v5; do
    # A: visited starts, independent noise (the issue note's setting)
    ppo-control sweep --env-id $env $COMMON --seeds $seed --grid start_state=visited --grid crn=false --grid horizon=32
    # B: branch (vine) starts from the current policy's trunks, common random numbers
    ppo-control sweep --env-id $env $COMMON --seeds $seed --grid start_state=branch --grid crn=true --grid horizon=32
  done
done
