#!/usr/bin/env bash
# Pilot for the tuned preset (issue 11): candidate settings on top of the fast preset, 1M steps, 2 seeds,
# periodic deterministic eval every 50k steps (for the peak-of-mean-eval metric). Resumable: run it again
# and finished runs are skipped, interrupted ones resume.
#   bash benchmarks/tuned_pilot.sh [ENV_ID] [SEEDS...]
set -euo pipefail
env_id=${1:-HalfCheetah-v5}; shift || true
seeds=${*:-1 2}
out=results/runs/tuned_pilot/${env_id%%-*}
common=(--preset fast --env-id "$env_id" --total-steps 1000000 --eval-interval 50000 --eval-interval-episodes 5
        --seeds $seeds --workers 1 --no-report)
# C0: fast + log_std starting at -0.5 (std 0.61; Tianshou's init)
ppo-control sweep "${common[@]}" --init-log-std -0.5 --out-dir "$out/c0_logstd"
# C1: C0 + advantages every epoch + value-target normalisation instead of reward scaling + vf_coef 0.25
ppo-control sweep "${common[@]}" --init-log-std -0.5 --adv-every-epoch --value-norm --no-norm-reward \
    --vf-coef 0.25 --out-dir "$out/c1_details"
# C2: C0 + a wider critic (256x256) than the 64x64 actor (Andrychowicz et al. 2021)
ppo-control sweep "${common[@]}" --init-log-std -0.5 --critic-hidden-sizes 256,256 --out-dir "$out/c2_widecritic"
# C3: C1 + C2 (details and the wide critic together)
ppo-control sweep "${common[@]}" --init-log-std -0.5 --adv-every-epoch --value-norm --no-norm-reward \
    --vf-coef 0.25 --critic-hidden-sizes 256,256 --out-dir "$out/c3_details_widecritic"
