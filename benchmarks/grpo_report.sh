#!/usr/bin/env bash
# Tables and figures for issue 12's 1M GRPO runs (benchmarks/grpo_1m.sh) against the committed PPO runs.
# No training: reads run directories only. Per env:
#   results/grpo_1m/ENV_vs_ppo_default.{md,csv,png}  final deterministic eval (10 episodes) vs PPO's
#       default preset (results/runs/mujoco_suite/ppo_default); curves = training episodes (GRPO branch
#       runs: the trunks' episodes; GRPO visited runs have none, their curve is the eval figure)
#   results/grpo_1m/ENV_eval.{md,csv,png}, ENV_eval_time.png  periodic deterministic eval against env
#       steps / wall time, vs PPO's fast and tuned presets (the committed PPO runs with eval every 50k;
#       tuned: each task's runs of its current row, as benchmarks/tuned_report.py reads them); the GRPO
#       runs include the long-horizon settings (H 256 / gamma 0.995, H 512 / 0.998) of the falling pilot
#   results/grpo_1m/targets.{md,csv}  every GRPO setting against both PPO presets, the issue's targets
#   results/grpo_factorial/factorial.{md,csv,png}  experiment 1: start x CRN x advantage x horizon (HalfCheetah, Hopper)
#   results/grpo_factorial/ENV_eval{,_time}.{md,csv,png}  the ablation's cells taken on to >= 5 seeds (and to
#       Walker2d/Ant) against PPO's fast and tuned presets, per env step and per second
#   results/grpo_tuning/ENV{,_round2,_round3}.{md,csv,png}  changes from each task's base cell (HalfCheetah,
#       Walker2d, Hopper), a figure per tuning round (below: tuning_round)
#   results/grpo_tuning/{hopper,ant}_advbatch.{md,csv,png}  batch-scaled advantages against a same-batch base cell
#   results/grpo_10m/ENV{,_time}.{md,csv,png}  10M steps, GRPO against the tuned PPO preset
#   results/grpo_10m/hopper_advbatch.{md,csv,png}  10M, batch-scaled advantages against per-group scaling, Hopper
#       seeds run in one batch only (batch s1-5, group s6-10; the group row's seeds 1-5 are older runs on other CPUs)
#   results/grpo_10m/targets.md  the 10M target: per task and setting, every seed's final eval against tuned PPO
#   results/grpo_falling_pilot/ENV.{md,csv,png}  the horizon/gamma settings of benchmarks/grpo_falling_pilot.sh
#       beside setting A (H 32, gamma 0.95)
set -eu
short() { echo "$1" | tr 'A-Z' 'a-z' | sed 's/-v5//'; }  # HalfCheetah-v5 -> halfcheetah (file names)
mkdir -p results/grpo_1m
for env in HalfCheetah-v5 Hopper-v5 Walker2d-v5 Ant-v5; do
  low=$(short "$env")
  grpo=$(ls -d results/runs/grpo_1m/${env}__* results/runs/grpo_falling_pilot/${env}__horizon=256__* \
             results/runs/grpo_falling_pilot/${env}__horizon=512__* 2>/dev/null || true)
  [ -n "$grpo" ] || continue
  ppo_eval=$(ls -d results/runs/ppo_fast_1m/${env}__ppo__s* results/runs/ppo_fast_more_1m/${env}__ppo__s* 2>/dev/null || true)
  # the tuned preset's runs of the task's current row (benchmarks/tuned_report.py SOURCES)
  tuned=$(python -c "import sys; sys.path.insert(0, 'benchmarks'); from tuned_report import SOURCES; print(*SOURCES['${env%%-*}'])")
  ppo_eval="$ppo_eval $(ls -d $(for d in $tuned; do echo $d/${env}__s*; done) 2>/dev/null || true)"
  ppo-control plot $grpo results/runs/mujoco_suite/ppo_default/${env}__ppo__s* --group-by algo preset start_state crn grpo_train_steps horizon gamma \
      --curve charts/episodic_return --metric eval_return --out results/grpo_1m/${low}_vs_ppo_default.png
  ppo-control plot $grpo $ppo_eval --group-by algo preset start_state crn grpo_train_steps horizon gamma \
      --curve eval/return --metric eval_return --out results/grpo_1m/${low}_eval.png
  ppo-control plot $grpo $ppo_eval --group-by algo preset start_state crn grpo_train_steps horizon gamma \
      --curve eval/return --metric eval_return --x time --out results/grpo_1m/${low}_eval_time.png
done
python benchmarks/grpo_diagnostics.py results/runs/grpo_1m > results/grpo_1m/diagnostics.md
python benchmarks/grpo_targets.py --out results/grpo_1m/targets --out-10m results/grpo_10m/targets
# the horizon/gamma pilot (benchmarks/grpo_falling_pilot.sh) beside setting A (H 32, gamma 0.95), per task
mkdir -p results/grpo_falling_pilot
python benchmarks/grpo_diagnostics.py results/runs/grpo_falling_pilot > results/grpo_falling_pilot/diagnostics.md
for env in Hopper-v5 Walker2d-v5 Ant-v5 HalfCheetah-v5; do
  low=$(short "$env")
  runs=$(ls -d results/runs/grpo_falling_pilot/${env}__* results/runs/grpo_1m/${env}__start_state=visited__crn=false__horizon=32__s* \
         2>/dev/null || true)
  [ -n "$runs" ] || continue
  ppo-control plot $runs --group-by horizon gamma --curve eval/return --metric eval_return \
      --out results/grpo_falling_pilot/${low}.png
done
# 10M steps (benchmarks/grpo_10m.sh, chunked): GRPO against PPO's tuned preset, per env step and per second,
# one figure per task (the group-by has no env id, so never mix tasks in one plot; ent_coef tells the second
# GRPO setting, grpo:visited:512:0.998::ent_coef=0.01, from the first; lr_decay_steps/lr_floor the PPO lr-schedule
# control, ppo:lr_decay_steps=1000000:lr_floor=0.1, from the tuned preset as it is); finished runs only
for env in HalfCheetah-v5 Hopper-v5 Walker2d-v5 Ant-v5; do
  low=$(short "$env")
  runs10=$(for d in results/runs/grpo_10m/*/${env}__*; do [ -f "$d/summary.json" ] && echo "$d"; done)  # finished only
  [ -n "$runs10" ] || continue
  mkdir -p results/grpo_10m
  ppo-control plot $runs10 --group-by algo preset start_state horizon gamma grpo_adv_scale ent_coef log_std_max lr_decay_steps lr_floor --curve eval/return --metric eval_return \
      --out results/grpo_10m/${low}.png
  ppo-control plot $runs10 --group-by algo preset start_state horizon gamma grpo_adv_scale ent_coef log_std_max lr_decay_steps lr_floor --curve eval/return --metric eval_return \
      --x time --out results/grpo_10m/${low}_time.png
done
# experiment 1, the ablation (benchmarks/grpo_factorial.sh): cells x horizon, main effects, diagnostics, figure
if [ -d results/runs/grpo_factorial ]; then
  python benchmarks/grpo_factorial_report.py --runs results/runs/grpo_factorial --out results/grpo_factorial/factorial
  # experiment 2 from the ablation: per task, its CRN-off per-step cells with at least 5 seeds (the cells
  # taken on to more seeds and to Walker2d/Ant; every cell has 3), eval against env steps and wall time beside
  # PPO's fast and tuned presets
  for env in HalfCheetah-v5 Hopper-v5 Walker2d-v5 Ant-v5; do
    low=$(short "$env")
    cells=$(ls -d results/runs/grpo_factorial/${env}__*crn=false__grpo_advantage=per_step__*__s* 2>/dev/null \
            | sed 's/__s[0-9]*$//' | sort | uniq -c | awk '$1 >= 5 {print $2}')
    [ -n "$cells" ] || continue
    grpo=$(for c in $cells; do ls -d ${c}__s*; done)
    ppo_eval=$(ls -d results/runs/ppo_fast_1m/${env}__ppo__s* results/runs/ppo_fast_more_1m/${env}__ppo__s* 2>/dev/null || true)
    tuned=$(python -c "import sys; sys.path.insert(0, 'benchmarks'); from tuned_report import SOURCES; print(*SOURCES['${env%%-*}'])")
    ppo_eval="$ppo_eval $(ls -d $(for d in $tuned; do echo $d/${env}__s*; done) 2>/dev/null || true)"
    ppo-control plot $grpo $ppo_eval --group-by algo preset start_state crn grpo_advantage horizon gamma \
        --curve eval/return --metric eval_return --out results/grpo_factorial/${low}_eval.png
    ppo-control plot $grpo $ppo_eval --group-by algo preset start_state crn grpo_advantage horizon gamma \
        --curve eval/return --metric eval_return --x time --out results/grpo_factorial/${low}_eval_time.png
  done
fi
# the tuning step after the ablation (benchmarks/grpo_tuning.sh): changes (KL beta, lr, G, epochs, gamma,
# advantage scale, and combinations) from each task's base cell, beside that cell's own runs: HalfCheetah's
# reset H 256 cell (10 seeds of the ablation), Walker2d's and Hopper's visited H 512 runs (falling pilot;
# Hopper also the ablation's 5)
tuning_base() {
  case $1 in
    HalfCheetah-v5) ls -d results/runs/grpo_factorial/HalfCheetah-v5__start_state=reset__crn=false__grpo_advantage=per_step__horizon=256__gamma=0.995__s* ;;
    Walker2d-v5) ls -d results/runs/grpo_falling_pilot/Walker2d-v5__horizon=512__gamma=0.998__s* ;;
    Hopper-v5) ls -d results/runs/grpo_falling_pilot/Hopper-v5__horizon=512__gamma=0.998__s* \
                     results/runs/grpo_factorial/Hopper-v5__start_state=visited__crn=false__grpo_advantage=per_step__horizon=512__gamma=0.998__s* ;;
  esac
}
# the rounds: 1 = KL beta, lr 1e-4, G 16, epochs 4; 3 = a same-batch base cell (today's defaults), the
# freeze-ended check and the entropy bonus (every change naming ent, alone or joined); 2 = every other change.
# A task gets a figure per round it has runs of (twelve curves in one repeat the palette's colours): its
# first round as ENV, each later one as ENV_roundN
tuning_round() {  # CHANGE -> its round
  case $1 in
    kl0.01|lr1e-4|g16|epochs4) echo 1 ;;
    base|nofreeze|ent*|*+ent*) echo 3 ;;
    *) echo 2 ;;
  esac
}
tuning_runs() {  # ENV ROUND -> the run dirs of that round's changes on ENV
  for d in results/runs/grpo_tuning/*/; do
    [ "$(tuning_round "$(basename "$d")")" = "$2" ] || continue
    ls -d "$d$1"__s* 2>/dev/null || true
  done
}
for env in HalfCheetah-v5 Walker2d-v5 Hopper-v5; do
  name=
  for round in 1 2 3; do
    tuning=$(tuning_runs $env $round)
    [ -n "$tuning" ] || continue
    if [ -z "$name" ]; then name=$(short $env); else name=$(short $env)_round$round; fi
    mkdir -p results/grpo_tuning
    ppo-control plot $(tuning_base $env) $tuning \
        --group-by kl_coef lr group_size update_epochs gamma grpo_adv_scale grpo_step_weight init_log_std num_envs ent_coef grpo_freeze_ended --curve eval/return --metric eval_return \
        --out results/grpo_tuning/$name.png
  done
done
# batch-scaled advantages on the falling tasks (grpo_tuning.sh advbatch on Hopper and Ant) against the
# base cell run beside them (grpo_tuning.sh base; Hopper's base seeds 1-2 are older runs on another CPU model), one
# figure per task
for env in Hopper-v5 Ant-v5; do
  runs=$(ls -d results/runs/grpo_tuning/base/${env}__s* results/runs/grpo_tuning/advbatch/${env}__s* 2>/dev/null || true)
  [ -n "$runs" ] || continue
  mkdir -p results/grpo_tuning
  ppo-control plot $runs --group-by grpo_adv_scale --curve eval/return --metric eval_return \
      --out results/grpo_tuning/$(short $env)_advbatch.png
done
# 10M: batch-scaled advantages against per-group scaling on Hopper, same batch only (one Intel Xeon VM, one session:
# batch seeds 1-5 and group seeds 6-10; group seeds 1-5 ran earlier on other CPU models and stay out of this figure)
h10=results/runs/grpo_10m/grpo/Hopper-v5
runs=$(for d in ${h10}__start_state=visited__horizon=512__gamma=0.998__grpo_adv_scale=batch__s{1,2,3,4,5} \
                ${h10}__horizon=512__gamma=0.998__s{6,7,8,9,10}; do [ -f "$d/summary.json" ] && echo "$d"; done)
if [ -n "$runs" ]; then
  ppo-control plot $runs --group-by grpo_adv_scale --curve eval/return --metric eval_return \
      --out results/grpo_10m/hopper_advbatch.png
fi
# 10M: the std cap on Hopper, batch-scaled advantages with --log-std-max 0 (std at most 1; SETTINGS=
# grpo:visited:512:0.998:batch:log_std_max=0) against the same flags uncapped, seeds 1-5 each (both Intel Xeon,
# two at a time, but two sessions apart: a different batch)
runs=$(for d in ${h10}__start_state=visited__horizon=512__gamma=0.998__grpo_adv_scale=batch__s{1,2,3,4,5} \
                ${h10}__start_state=visited__horizon=512__gamma=0.998__grpo_adv_scale=batch__log_std_max=0__s{1,2,3,4,5}; do
         [ -f "$d/summary.json" ] && echo "$d"; done)
if [ -n "$runs" ]; then
  ppo-control plot $runs --group-by log_std_max --curve eval/return --metric eval_return \
      --out results/grpo_10m/hopper_stdcap.png
  # (no training-return plot: with visited starts no whole training episode exists; the table's member return
  # column is the stochastic policy's measure)
  python benchmarks/grpo_stdcap_report.py --out results/grpo_10m/hopper_stdcap_table.md $runs
fi
