#!/usr/bin/env bash
# Large-batch candidates for the fast preset on Hopper-v5 (32 envs x 64 steps, lr 3e-4, 16 or 32
# minibatches), seeds 1-3, 1M steps. Compared in results/fast_hopper_tune.md with classic, the
# default shape and the fast preset's HalfCheetah settings (benchmarks/make_results.sh).
set -eu
ppo-control sweep --env-id Hopper-v5 --preset fast --num-envs 32 --num-steps 64 --lr 3e-4 \
    --grid num_minibatches=16,32 --seeds 1 2 3 --workers ${WORKERS:-2} --total-steps 1000000 --no-report \
    --out-dir results/runs/fast_hopper_tune
