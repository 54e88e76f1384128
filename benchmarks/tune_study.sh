#!/usr/bin/env bash
# The committed Optuna study behind a tuned-preset row (issue 11): the `ppo_lite` space
# (ppo_control/experiments/search_space.py) on top of the tuned preset, 1M steps, every trial on
# seeds 1 and 2 (one process at a time, so pruning acts on the second seed), median pruner on the
# periodic deterministic evaluation. Resumable: the same command continues the study (the SQLite
# file in results/tune/), adding N_TRIALS more. Report only: add --report.
#   bash benchmarks/tune_study.sh ENV_ID N_TRIALS [extra tune options]   e.g. ... Swimmer-v5 14
set -euo pipefail
env_id=$1; n_trials=$2; shift 2
ppo-control tune --env-id "$env_id" --preset tuned --space ppo_lite --seeds 1 2 --workers 1 \
    --total-steps 1000000 --eval-interval 50000 --n-trials "$n_trials" --out-dir results/runs/tune "$@"
