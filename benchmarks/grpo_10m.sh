#!/usr/bin/env bash
# Issue 12, experiment 2 at 10M steps: GRPO's settings against PPO's tuned preset at equal env steps,
# in chunks. A call trains for at most CHUNK_MIN minutes (default 50), then stops the run in progress
# with SIGTERM: it saves a checkpoint and the next call resumes it (the sweep skips finished runs and
# resumes interrupted ones), so any number of calls adds up to the same runs. Seed-major order, so a
# partial campaign covers every setting. Deterministic evaluation every 250k steps for both algorithms.
#   CHUNK_MIN=50 ENVS="HalfCheetah-v5" SEEDS="1 2 3 4 5" bash benchmarks/grpo_10m.sh
# SETTINGS lists what runs per env and seed: grpo:H:GAMMA (visited starts, per-step advantages, G 8,
# 64 envs, init log-std -0.5: setting A of results/grpo_1m/reading.md with horizon H and discount GAMMA)
# and ppo (the tuned preset). Default: HalfCheetah's best GRPO setting (H 32 / 0.95) and PPO.
set -eu
OUT=${OUT:-results/runs/grpo_10m}
STEPS=${STEPS:-10000000}
deadline=$(( $(date +%s) + ${CHUNK_S:-$(( ${CHUNK_MIN:-50} * 60 ))} ))
GRPO="--algo grpo --start-state visited --no-crn --grpo-advantage per_step --group-size 8 --num-envs 64
      --init-log-std -0.5"
COMMON="--total-steps $STEPS --eval-interval 250000 --workers 1 --no-report --no-progress"
chunk_done() { echo "grpo_10m: chunk time used up; run the same command again to go on"; exit 0; }
for seed in ${SEEDS:-1 2 3 4 5}; do
  for env in ${ENVS:-HalfCheetah-v5}; do
    for setting in ${SETTINGS:-grpo:32:0.95 ppo}; do
      left=$(( deadline - $(date +%s) ))
      [ $left -ge 30 ] || chunk_done
      if [ "$setting" = ppo ]; then
        args="--preset tuned $COMMON --out-dir $OUT/ppo_tuned"
      else
        h=$(echo $setting | cut -d: -f2); g=$(echo $setting | cut -d: -f3)
        args="$GRPO $COMMON --out-dir $OUT/grpo --grid horizon=$h --grid gamma=$g"
      fi
      rc=0
      timeout -s TERM -k 300 $left ppo-control sweep --env-id $env --seeds $seed $args || rc=$?
      [ $rc -ne 124 ] || chunk_done
      [ $rc -eq 0 ] || exit $rc
    done
  done
done
echo "grpo_10m: every run finished"
