#!/usr/bin/env bash
# Ablation of the tuned preset (issue 11), in the spirit of Andrychowicz et al. 2021: from the tuned
# settings, one change at a time, 1M steps, the same seeds as the tuned table (whose runs in
# results/runs/tuned_1m are the baseline). Resumable: run it again and finished runs are skipped,
# interrupted ones resume. Report: python benchmarks/tuned_ablation_report.py
#   bash benchmarks/tuned_ablation.sh ENV_ID CHANGE SEEDS...    e.g. ... Hopper-v5 logstd0 1 2 3 4 5
# CHANGE is one of:
#   logstd0    log_std starts at 0 (std 1, the default preset's) instead of -0.5
#   critic64   the critic as small as the actor (64x64) instead of 256x256
#   details    + Tianshou's details: advantages recomputed every epoch, value-target normalisation
#              instead of reward scaling, value coefficient 0.25
#   lr3e-4     learning rate 3e-4 instead of 1e-3 (for a curve that peaks early and then oscillates)
# WORKERS (default 1) runs that many seeds at a time.
set -euo pipefail
env_id=$1; change=$2; shift 2
case $change in
  logstd0)  flags=(--init-log-std 0) ;;
  critic64) flags=(--critic-hidden-sizes 64,64) ;;
  details)  flags=(--adv-every-epoch --value-norm --no-norm-reward --vf-coef 0.25) ;;
  lr3e-4)   flags=(--lr 3e-4) ;;
  *) echo "unknown change '$change': use logstd0, critic64, details or lr3e-4" >&2; exit 2 ;;
esac
ppo-control sweep --preset tuned --env-id "$env_id" --total-steps 1000000 --seeds "$@" --workers "${WORKERS:-1}" --no-report \
    "${flags[@]}" --out-dir "results/runs/tuned_ablation/${env_id%%-*}/$change"
