#!/usr/bin/env bash
# Issue 12: seeds 4-5 of benchmarks/grpo_1m.sh's two settings (and grpo_1m_vine.sh's) on HalfCheetah-v5 (5 seeds: IQM is reported,
# and HalfCheetah's seeds split into modes). Same settings and output folder as grpo_1m.sh. Resumable.
set -eu
OUT=results/runs/grpo_1m
COMMON="--algo grpo --grpo-advantage per_step --group-size 8 --num-envs 64 --gamma 0.95 --init-log-std -0.5
        --total-steps 1000000 --eval-interval 50000 --workers 1 --no-report --no-progress --out-dir $OUT"
for seed in 4 5; do
  ppo-control sweep --env-id HalfCheetah-v5 $COMMON --seeds $seed --grid start_state=visited --grid crn=false --grid horizon=32
  ppo-control sweep --env-id HalfCheetah-v5 $COMMON --seeds $seed --grid start_state=branch --grid crn=true --grid horizon=32
done
for seed in 4 5; do  # C, the vine (benchmarks/grpo_1m_vine.sh)
  ppo-control sweep --env-id HalfCheetah-v5 $COMMON --seeds $seed --grid start_state=branch --grid crn=true \
      --grid horizon=16 --grid grpo_train_steps=branch --grid groups_per_iter=4 --grid num_minibatches=4
done
