#!/usr/bin/env bash
# PPO 'fast' preset, 1M steps, HalfCheetah-v5 and Hopper-v5, seeds 1-3, deterministic evaluation
# every 50k steps. Resumable: run it again to continue. Tables and curves into results/runs/ppo_fast_1m/.
set -eu
ppo-control bench --envs HalfCheetah-v5 Hopper-v5 --preset fast --seeds 1 2 3 --total-steps 1000000 \
    --eval-interval 50000 --workers 1 --out-dir results/runs/ppo_fast_1m
