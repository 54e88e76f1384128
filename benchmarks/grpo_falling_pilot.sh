#!/usr/bin/env bash
# Issue 12: can short-horizon GRPO learn a task that ends by falling? Setting A (visited starts,
# per_step, G 8, 64 envs, init log-std -0.5) failed on Hopper-v5 at H 32 / gamma 0.95 (269, 3 seeds,
# results/grpo_1m/reading.md): a 32-step return at gamma 0.95 sees little of a fall. This pilot
# lengthens the horizon and the discount together (H 64 / gamma 0.98, H 128 / gamma 0.99, H 256 / gamma
# 0.995, H 512 / gamma 0.998; the last two added as the trend showed), 1M steps,
# one run at a time, seed-major so a partial run covers both settings. Resumable.
#   SEEDS="1 2" bash benchmarks/grpo_falling_pilot.sh
# The best two settings on the other falling tasks, five seeds (issue 12, experiment 2):
#   ENVS="Walker2d-v5 Ant-v5" SETTINGS="256:0.995 512:0.998" SEEDS="1 2 3 4 5" bash benchmarks/grpo_falling_pilot.sh
set -eu
OUT=results/runs/grpo_falling_pilot
COMMON="--algo grpo --start-state visited --no-crn --grpo-advantage per_step --group-size 8 --num-envs 64
        --init-log-std -0.5 --total-steps 1000000 --eval-interval 50000 --workers 1 --no-report --no-progress
        --out-dir $OUT"
for seed in ${SEEDS:-1 2}; do
  for env in ${ENVS:-Hopper-v5}; do
    for setting in ${SETTINGS:-64:0.98 128:0.99 256:0.995 512:0.998}; do
      ppo-control sweep --env-id $env $COMMON --seeds $seed \
        --grid horizon=${setting%%:*} --grid gamma=${setting##*:}
    done
  done
done
