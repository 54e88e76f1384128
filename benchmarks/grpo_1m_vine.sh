#!/usr/bin/env bash
# Issue 12: setting C, the vine (branch starts, CRN, only the branch actions trained, H 16, 4 rounds per
# update, 4 minibatches), the cheapest per step in the pilot (stage 4), at 1M steps, seeds 1-3, HalfCheetah-v5
# and Hopper-v5, beside benchmarks/grpo_1m.sh's A and B in the same folder. Resumable.
set -eu
OUT=results/runs/grpo_1m
COMMON="--algo grpo --grpo-advantage per_step --group-size 8 --num-envs 64 --gamma 0.95 --init-log-std -0.5
        --total-steps 1000000 --eval-interval 50000 --workers 1 --no-report --no-progress --out-dir $OUT"
for seed in 1 2 3; do
  for env in HalfCheetah-v5 Hopper-v5; do
    ppo-control sweep --env-id $env $COMMON --seeds $seed --grid start_state=branch --grid crn=true \
        --grid horizon=16 --grid grpo_train_steps=branch --grid groups_per_iter=4 --grid num_minibatches=4
  done
done
