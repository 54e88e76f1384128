#!/usr/bin/env bash
# Regenerate every committed table and figure in results/ from the run directories
# (made by benchmarks/ppo_classic_1m.sh, benchmarks/ppo_fast_1m.sh, benchmarks/grpo_vs_ppo.sh, tuned_pilot.sh, tuned_1m.sh, tuned_ablation.sh,
# tune_study.sh, grpo_1m*.sh, grpo_falling_pilot.sh, benchmarks/mujoco_suite.py and benchmarks/lambda_ent_sweep.sh). Runs nothing but plotting.
set -eu
R=results/runs
ppo-control plot $R/ppo_classic_1m --out results/ppo_classic_1m.png
ppo-control plot $R/ppo_classic_1m $R/ppo_fast_1m --group-by preset --out results/ppo_classic_vs_fast.png
ppo-control plot $R/ppo_classic_1m $R/ppo_fast_1m --group-by preset --x time --out results/ppo_classic_vs_fast_time.png
ppo-control plot $R/ppo_fast_1m $R/grpo_reset_1m $R/grpo_visited_1m --group-by algo start_state \
    --curve eval/return --metric eval_return --out results/grpo_vs_ppo.png
# ablation that chose the fast preset's lr (same batch shape, lr 3e-4 vs 1e-3)
ppo-control plot $R/ppo_fast_lr3e-4_1m $R/ppo_fast_1m --group-by lr --out results/ppo_fast_lr_ablation.png
# the MuJoCo suite (default preset): table, curves vs steps and vs wall time
python benchmarks/mujoco_suite.py --report-only
# GAE lambda x entropy coefficient sweeps: curves per cell and a heatmap of the final return
for env in hopper halfcheetah; do
  if [ -d $R/${env}_lambda_ent ]; then
    ppo-control plot $R/${env}_lambda_ent --group-by gae_lambda ent_coef \
        --heatmap gae_lambda ent_coef --out results/lambda_ent/${env}.png
  fi
done
# the measurements behind the fast preset's Hopper-v5 exception (config.ENV_OVERRIDES):
# classic, the default batch shape, and three large-batch settings (made by the commands in
# results/fast_hopper_tune.md's footer and benchmarks/ppo_fast_1m.sh / lambda_ent_sweep.sh)
ppo-control plot $R/ppo_classic_1m/Hopper-v5__classic__s{1,2} $R/ppo_fast_1m/Hopper-v5__ppo__s{1,2,3} \
    $R/fast_hopper_tune "$R/hopper_lambda_ent/Hopper-v5__gae_lambda=0.95__ent_coef=0__s"{1,2,3} \
    --group-by num_envs num_steps num_minibatches lr --out results/fast_hopper_tune.png
# the fast preset on Walker2d-v5 and Ant-v5 against the default preset's suite runs
ppo-control plot results/runs/ppo_fast_more_1m $R/mujoco_suite/ppo_default/Walker2d-v5__ppo__s{1,2,3} \
    $R/mujoco_suite/ppo_default/Ant-v5__ppo__s{1,2,3} --group-by preset --out results/ppo_fast_vs_default.png
# the tuned preset: pilot candidates on HalfCheetah-v5, then the 1M table and curves vs published PPO
ppo-control plot $R/tuned_pilot/HalfCheetah --curve eval/return --out results/tuned_pilot.png
python benchmarks/tuned_report.py --out results/tuned_1m/tuned  # every task's runs of its current row (SOURCES)
# the tuned preset's ablation (one change at a time, made by benchmarks/tuned_ablation.sh)
if [ -d $R/tuned_ablation ]; then
  python benchmarks/tuned_ablation_report.py --base $R/tuned_1m --runs $R/tuned_ablation --out results/tuned_ablation/ablation
fi
# GRPO at 1M steps against PPO (fast and tuned presets) and the longer-horizon Hopper pilot
bash benchmarks/grpo_report.sh
# Optuna studies behind tuned-preset rows (benchmarks/tune_study.sh): report only, no trials
for db in results/tune/*__tuned__ppo_lite.db; do
  [ -e "$db" ] && bash benchmarks/tune_study.sh "$(basename "$db" | cut -d_ -f1)" 0 --report
done
