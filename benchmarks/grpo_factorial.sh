#!/usr/bin/env bash
# Issue 12, experiment 1: the GRPO ablation on HalfCheetah-v5 and Hopper-v5 at 1M steps.
# Factors: start source (reset / visited / branch) x CRN (off / on) x advantage (outcome / per_step)
# x horizon (a short one, H 32 / gamma 0.95, and each task's long one: HalfCheetah H 256 / 0.995,
# Hopper H 512 / 0.998, the best long settings of results/grpo_1m). Fixed: G 8, 64 envs (8 groups
# per round), init log-std -0.5, every member step trained, the default preset's optimiser
# (lr 3e-4 annealed, 10 epochs, 32 minibatches), no KL term. 24 cells per task.
# Seed-major (a partial run covers every cell with the same seeds), two runs at a time, resumable:
# run it again and finished runs are skipped, interrupted ones resume from their checkpoint.
#   SEEDS=1 bash benchmarks/grpo_factorial.sh                 # the screen: every cell, one seed
#   SEEDS="2 3" STARTS=visited CRNS=false bash benchmarks/grpo_factorial.sh   # more seeds, fewer cells
# One cell, many seeds: SEED_MAJOR=0 gives the sweep all seeds at once, so the two workers run two
# seeds of the cell side by side (seed-major would run a one-cell sweep one run at a time):
#   SEED_MAJOR=0 SEEDS="4 5" ENVS=Hopper-v5 SETTINGS=512:0.998 STARTS=branch CRNS=false ADVS=per_step \
#     bash benchmarks/grpo_factorial.sh
# Walker2d-v5 and Ant-v5 take their best long horizon of results/grpo_1m (experiment 2's tasks).
# Table and figure: python benchmarks/grpo_factorial_report.py
set -eu
OUT=${OUT:-results/runs/grpo_factorial}
COMMON="--algo grpo --group-size 8 --num-envs 64 --init-log-std -0.5 --total-steps 1000000
        --eval-interval 50000 --workers ${WORKERS:-2} --no-report --no-progress --out-dir $OUT"
settings_for() {
  case $1 in
    HalfCheetah-v5) echo "${SETTINGS:-32:0.95 256:0.995}" ;;
    Hopper-v5) echo "${SETTINGS:-32:0.95 512:0.998}" ;;
    Walker2d-v5) echo "${SETTINGS:-512:0.998}" ;;
    Ant-v5) echo "${SETTINGS:-256:0.995}" ;;
    *) echo "no horizon settings for $1" >&2; exit 2 ;;
  esac
}
join() { echo "$*" | tr ' ' ','; }
if [ "${SEED_MAJOR:-1}" = 0 ]; then SEED_GROUPS=("${SEEDS:-1 2 3}"); else SEED_GROUPS=(${SEEDS:-1 2 3}); fi
for seeds in "${SEED_GROUPS[@]}"; do
  for env in ${ENVS:-HalfCheetah-v5 Hopper-v5}; do
    for setting in $(settings_for $env); do
      ppo-control sweep --env-id $env $COMMON --seeds $seeds \
        --grid start_state=$(join ${STARTS:-reset visited branch}) \
        --grid crn=$(join ${CRNS:-false true}) \
        --grid grpo_advantage=$(join ${ADVS:-outcome per_step}) \
        --grid horizon=${setting%%:*} --grid gamma=${setting##*:}
    done
  done
done
