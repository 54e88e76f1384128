#!/usr/bin/env bash
# Issue 12, experiment 1's last part: GRPO's optimiser settings in the order the source articles give
# (a small KL beta and a small learning rate first, then widen: bigger groups, fewer epochs), one change
# at a time from the ablation's best HalfCheetah cell (reset starts, CRN off, per-step advantages,
# H 256 / gamma 0.995, G 8, 64 envs, init log-std -0.5, lr 3e-4 annealed, 10 epochs, 32 minibatches,
# no KL term), whose runs in results/runs/grpo_factorial are the baseline. HalfCheetah because that
# cell is the cheapest one of the ablation (about 2.3 min per 1M-step run with two at a time).
# Resumable: run it again and finished runs are skipped, interrupted ones resume.
#   bash benchmarks/grpo_tuning.sh CHANGE SEEDS...        e.g. bash benchmarks/grpo_tuning.sh kl0.01 1 2 3 4 5
# CHANGE is one of:
#   kl0.01    k3 KL penalty to the initial policy, beta 0.01
#   lr1e-4    learning rate 1e-4 instead of 3e-4
#   g16       16 members per group instead of 8 (4 groups per round instead of 8)
#   epochs4   4 passes over each batch instead of 10
# WORKERS (default 2) runs that many seeds at a time. Report: bash benchmarks/grpo_report.sh
set -euo pipefail
change=$1; shift
case $change in
  kl0.01)  flags=(--kl-coef 0.01) ;;
  lr1e-4)  flags=(--lr 1e-4) ;;
  g16)     flags=(--group-size 16) ;;
  epochs4) flags=(--update-epochs 4) ;;
  *) echo "unknown change '$change': use kl0.01, lr1e-4, g16 or epochs4" >&2; exit 2 ;;
esac
[ $# -gt 0 ] || { echo "give the seeds, e.g. bash benchmarks/grpo_tuning.sh $change 1 2 3 4 5" >&2; exit 2; }
ppo-control sweep --env-id HalfCheetah-v5 --algo grpo --start-state reset --grpo-advantage per_step \
    --horizon 256 --gamma 0.995 --group-size 8 --num-envs 64 --init-log-std -0.5 --total-steps 1000000 \
    --eval-interval 50000 --seeds "$@" --workers "${WORKERS:-2}" --no-report --no-progress \
    "${flags[@]}" --out-dir "results/runs/grpo_tuning/$change"
