#!/usr/bin/env bash
# The tuned preset at 1M steps (issue 11): each task's seeds as one resumable sweep (finished runs are
# skipped, interrupted ones resume), then the table and curves against the published numbers.
#   bash benchmarks/tuned_1m.sh ENV_ID SEEDS...       e.g. bash benchmarks/tuned_1m.sh Hopper-v5 1 2 3 4 5
# OUT (default results/runs/tuned_1m) puts the runs elsewhere, e.g. for a row that changed after its runs:
#   OUT=results/runs/tuned_1m_r2 bash benchmarks/tuned_1m.sh Swimmer-v5 3 4 5
set -euo pipefail
env_id=$1; shift
ppo-control sweep --preset tuned --env-id "$env_id" --total-steps 1000000 --seeds "$@" --workers 1 --no-report \
    --out-dir "${OUT:-results/runs/tuned_1m}/${env_id%%-*}"
