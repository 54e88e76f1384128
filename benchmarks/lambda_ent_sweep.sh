#!/usr/bin/env bash
# Issue 5's sweep: GAE lambda in {0.9, 0.95, 0.99} x entropy coefficient in {0, 0.01}, PPO 'default'
# preset, 1M steps, seeds 1-3, on Hopper-v5 and HalfCheetah-v5 (36 runs, ~4-5 min each with two
# at a time on 2 cores). Resumable: run it again to continue; finished runs are skipped.
# Seed 1 of every cell runs before seed 2, so a partial sweep still covers the whole grid.
set -eu
GRID="--grid gae_lambda=0.9,0.95,0.99 --grid ent_coef=0.0,0.01"
COMMON="--preset default --total-steps 1000000 --workers ${WORKERS:-2} --no-report"
for seed in 1 2 3; do
  ppo-control sweep --env-id Hopper-v5 $GRID --seeds $seed $COMMON --out-dir results/runs/hopper_lambda_ent
  ppo-control sweep --env-id HalfCheetah-v5 $GRID --seeds $seed $COMMON --out-dir results/runs/halfcheetah_lambda_ent
done
for env in hopper halfcheetah; do
  ppo-control plot results/runs/${env}_lambda_ent --group-by gae_lambda ent_coef \
      --heatmap gae_lambda ent_coef --out results/lambda_ent/${env}.png
done
