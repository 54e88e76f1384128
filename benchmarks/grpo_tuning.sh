#!/usr/bin/env bash
# Issue 12, experiment 1's last part: GRPO's optimiser settings in the order the source articles give
# (a small KL beta and a small learning rate first, then widen: bigger groups, fewer epochs), one change
# at a time from the ablation's best HalfCheetah cell (reset starts, CRN off, per-step advantages,
# H 256 / gamma 0.995, G 8, 64 envs, init log-std -0.5, lr 3e-4 annealed, 10 epochs, 32 minibatches,
# no KL term), whose runs in results/runs/grpo_factorial are the baseline. HalfCheetah because that
# cell is the cheapest one of the ablation (about 2.3 min per 1M-step run with two at a time).
# Resumable: run it again and finished runs are skipped, interrupted ones resume.
# ENV picks the task and so the base cell, each task's best of the ablation / experiment 2
# (results/grpo_factorial/reading.md): HalfCheetah-v5 (default) reset H 256 / 0.995; Hopper-v5 and
# Walker2d-v5 visited H 512 / 0.998; Ant-v5 visited H 256 / 0.995. Runs go to
# results/runs/grpo_tuning/CHANGE/ENV__sSEED beside the other tasks' runs of that change.
#   bash benchmarks/grpo_tuning.sh CHANGE SEEDS...        e.g. bash benchmarks/grpo_tuning.sh kl0.01 1 2 3 4 5
# CHANGE is one of:
#   kl0.01    k3 KL penalty to the initial policy, beta 0.01
#   lr1e-4    learning rate 1e-4 instead of 3e-4
#   g16       16 members per group instead of 8 (4 groups per round instead of 8)
#   epochs4   4 passes over each batch instead of 10
#   lr1e-3    learning rate 1e-3 (tuned PPO's); the other way: the cell's approx_kl is ~0.005 and
#             clipfrac ~0.06 per update, an update moves the policy little and only 62 of them fit in 1M
#   lr6e-4    learning rate 6e-4, between the two
#   gamma0.99 discount 0.99 instead of 0.995 (same H 256): a per-step reward-to-go sums fewer steps of
#   gamma0.95 action noise, so the advantage of one action is less drowned (0.95: ~20 steps, like GAE's)
#   stepw     --grpo-step-weight step: every trained step weighs the same (a plain mean) instead of each
#             member rollout summing to 1/M; on a falling task a member that falls at step 20 otherwise
#             gives each of its steps 25 times the weight of a step of a member that lasts 512
#   envs32    --num-envs 32: 4 groups per round instead of 8, so more updates per 1M steps (163 not 105 on Walker2d) from half
#             the data each (Walker2d's base cell is still rising at 1M after ~100 updates)
#   envs16    --num-envs 16: 2 groups per round (260 updates per 1M on Walker2d)
#   std-1     --init-log-std -1.0 (std 0.37 instead of 0.61): GRPO has no entropy term and its std hardly
#             moves (Walker2d's base runs go from 0.61 to 0.50-0.60 in 1M steps), so members of a falling task fall from noise alone
#   advbatch  --grpo-adv-scale batch: group-centred advantages divided by one RMS per round, not by
#             each group's std at each step (which gives a step where members barely differ unit spread)
#   base      no change: the cell as today's defaults run it (with --grpo-freeze-ended, default since it was
#             added; the cell's earlier runs were made before it), a same-machine baseline for the changes
#   nofreeze  --no-grpo-freeze-ended: members that fell keep stepping, as every run before the option did
#   ent0.01   --ent-coef 0.01: an entropy bonus (GRPO's default has none; its std hardly moves on Walker2d)
#   ent0.02   --ent-coef 0.02: twice that bonus (piloted when Walker2d's ent0.01 stood at 1,419 over 6 seeds
#             against 862 for the same-batch base cell)
# Changes join with + (lr1e-3+gamma0.99); the later flag wins where two set the same option.
# WORKERS (default 2) runs that many seeds at a time. Report: bash benchmarks/grpo_report.sh
set -euo pipefail
change=$1; shift
flags=()
IFS=+ read -ra parts <<< "$change"
for part in "${parts[@]}"; do
  case $part in
    kl0.01)    flags+=(--kl-coef 0.01) ;;
    lr1e-4)    flags+=(--lr 1e-4) ;;
    lr6e-4)    flags+=(--lr 6e-4) ;;
    lr1e-3)    flags+=(--lr 1e-3) ;;
    g16)       flags+=(--group-size 16) ;;
    epochs4)   flags+=(--update-epochs 4) ;;
    gamma0.99) flags+=(--gamma 0.99) ;;
    gamma0.95) flags+=(--gamma 0.95) ;;
    advbatch)  flags+=(--grpo-adv-scale batch) ;;
    std-1)     flags+=(--init-log-std -1.0) ;;
    stepw)     flags+=(--grpo-step-weight step) ;;
    envs32)    flags+=(--num-envs 32) ;;
    envs16)    flags+=(--num-envs 16) ;;
    base)      ;;
    nofreeze)  flags+=(--no-grpo-freeze-ended) ;;
    ent0.01)   flags+=(--ent-coef 0.01) ;;
    ent0.02)   flags+=(--ent-coef 0.02) ;;
    *) echo "unknown change '$part': use one listed at the top of benchmarks/grpo_tuning.sh, or several" \
            "joined by + (e.g. lr1e-3+gamma0.99)" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "give the seeds, e.g. bash benchmarks/grpo_tuning.sh $change 1 2 3 4 5" >&2; exit 2; }
env=${ENV:-HalfCheetah-v5}
case $env in
  HalfCheetah-v5)          base=(--start-state reset --horizon 256 --gamma 0.995) ;;
  Hopper-v5|Walker2d-v5)   base=(--start-state visited --horizon 512 --gamma 0.998) ;;
  Ant-v5)                  base=(--start-state visited --horizon 256 --gamma 0.995) ;;
  *) echo "ENV=$env has no base cell: use HalfCheetah-v5, Hopper-v5, Walker2d-v5 or Ant-v5" >&2; exit 2 ;;
esac
ppo-control sweep --env-id "$env" --algo grpo "${base[@]}" --grpo-advantage per_step --group-size 8 --num-envs 64 \
    --init-log-std -0.5 --total-steps 1000000 --eval-interval 50000 --seeds "$@" --workers "${WORKERS:-2}" --no-report --no-progress \
    "${flags[@]}" --out-dir "results/runs/grpo_tuning/$change"
