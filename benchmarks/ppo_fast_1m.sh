#!/usr/bin/env bash
# PPO 'fast' preset settings (64 envs x 64 steps, 8 minibatches, lr 1e-3), 1M steps, HalfCheetah-v5
# and Hopper-v5, seeds 1-3, deterministic evaluation every 50k steps. Resumable: run it again to
# continue. Tables and curves into results/runs/ppo_fast_1m/.
# The four batch settings are spelled out because the fast preset now keeps the default batch
# shape on Hopper-v5 (config.ENV_OVERRIDES, chosen from these runs and benchmarks/fast_hopper_tune.sh).
set -eu
ppo-control bench --envs HalfCheetah-v5 Hopper-v5 --preset fast --seeds 1 2 3 --total-steps 1000000 \
    --num-envs 64 --num-steps 64 --num-minibatches 8 --lr 1e-3 \
    --eval-interval 50000 --workers 1 --out-dir results/runs/ppo_fast_1m
