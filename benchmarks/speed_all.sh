#!/usr/bin/env bash
# Every speed figure of the README in one go (run it on an otherwise idle machine; ~12 min on 2 cores):
#   bash benchmarks/speed_all.sh BEFORE_COMMIT
# before/after the given commit (training SPS, collect/update split, the update alone), the update's
# optimizer variants and torch.compile, classic vs Stable-Baselines3, and 1M steps of HalfCheetah with
# the fast preset (with and without --compile). Results go to results/speed/.
set -euo pipefail
before=${1:?usage: bash benchmarks/speed_all.sh BEFORE_COMMIT}
after=$(git rev-parse HEAD)
rm -rf /tmp/speed_before /tmp/speed_after
git worktree add -f /tmp/speed_before "$before" >/dev/null
git worktree add -f /tmp/speed_after "$after" >/dev/null
python benchmarks/ab_commits.py --before /tmp/speed_before --after /tmp/speed_after --repeats 3 --out results/speed/before_after
PYTHONPATH=/tmp/speed_after python benchmarks/update_speed.py --repeats 7 --out results/speed/update
PYTHONPATH=/tmp/speed_after python benchmarks/speed.py ppo --env-ids HalfCheetah-v5 --total-steps 40960 --repeats 3 --ppo-envs 1
PYTHONPATH=/tmp/speed_after python benchmarks/wall_1m.py --presets fast --compile fast --out results/speed/wall_1m_fast
git worktree remove --force /tmp/speed_before
git worktree remove --force /tmp/speed_after
