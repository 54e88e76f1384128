"""benchmarks/grpo_10m.sh turns each SETTINGS word into the sweep flags it names (checked with a stub
ppo-control on PATH that prints its arguments, so nothing trains)."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("bash") is None or shutil.which("timeout") is None,
                                reason="needs bash and coreutils timeout")


def _run(tmp_path, settings):
    stub = tmp_path / "bin" / "ppo-control"
    stub.parent.mkdir()
    stub.write_text("#!/bin/sh\necho \"ARGS: $*\"\n")
    stub.chmod(0o755)
    env = dict(os.environ, PATH=f"{stub.parent}{os.pathsep}{os.environ['PATH']}", OUT=str(tmp_path / "out"),
               ENVS="Hopper-v5", SEEDS="3", SETTINGS=settings, CHUNK_MIN="5")
    p = subprocess.run(["bash", str(ROOT / "benchmarks" / "grpo_10m.sh")], env=env, capture_output=True,
                       text=True, cwd=ROOT)
    calls = [line[len("ARGS: "):].split() for line in p.stdout.splitlines() if line.startswith("ARGS: ")]
    return p, calls


def _grids(args):
    return [args[i + 1] for i, a in enumerate(args) if a == "--grid"]


def test_settings_forms_map_to_sweep_flags(tmp_path):
    p, calls = _run(tmp_path, "grpo:512:0.998 grpo:reset:256:0.995:batch grpo:visited:512:0.998::ent_coef=0.01 ppo")
    assert p.returncode == 0, p.stderr
    assert len(calls) == 4
    short, scaled, extra, ppo = calls
    assert short[:4] == ["sweep", "--env-id", "Hopper-v5", "--seeds"] and short[4] == "3"
    # grpo:H:GAMMA: visited starts as a plain flag, so the run name carries only horizon and gamma
    assert "--start-state" in short and short[short.index("--start-state") + 1] == "visited"
    assert _grids(short) == ["horizon=512", "gamma=0.998"]
    assert _grids(scaled) == ["start_state=reset", "horizon=256", "gamma=0.995", "grpo_adv_scale=batch"]
    # an empty SCALE adds no scale field; FIELD=V words after it become grid fields, in order
    assert _grids(extra) == ["start_state=visited", "horizon=512", "gamma=0.998", "ent_coef=0.01"]
    for call in (short, scaled, extra):
        assert call[call.index("--algo") + 1] == "grpo" and call[call.index("--total-steps") + 1] == "10000000"
        assert call[call.index("--out-dir") + 1].endswith("out/grpo")
    assert ppo[ppo.index("--preset") + 1] == "tuned" and ppo[ppo.index("--out-dir") + 1].endswith("out/ppo_tuned")
    assert "every run finished" in p.stdout


@pytest.mark.parametrize("settings, word", [("grpo:visited:512:0.998::ent_coef", "ent_coef"),
                                             ("ppo:lr_floor", "lr_floor"), ("ppo_default:lr_floor", "lr_floor")])
def test_extra_word_without_value_is_refused(tmp_path, settings, word):
    p, calls = _run(tmp_path, settings)
    assert p.returncode == 2 and calls == []
    assert f"'{word}'" in p.stderr and "FIELD=VALUE" in p.stderr


def test_ppo_with_fields_sets_grid_fields_on_the_tuned_preset(tmp_path):
    p, calls = _run(tmp_path, "ppo ppo:lr_decay_steps=1000000:lr_floor=0.1")
    assert p.returncode == 0, p.stderr
    plain, ctl = calls
    assert _grids(plain) == []  # the bare word keeps the run name ENV__sSEED the 10M table reads
    assert _grids(ctl) == ["lr_decay_steps=1000000", "lr_floor=0.1"]
    for call in (plain, ctl):
        assert call[call.index("--preset") + 1] == "tuned" and "--algo" not in call
        assert call[call.index("--out-dir") + 1].endswith("out/ppo_tuned")


def test_ppo_default_runs_the_default_preset_into_its_own_dir(tmp_path):
    p, calls = _run(tmp_path, "ppo_default ppo_default:ent_coef=0.001")
    assert p.returncode == 0, p.stderr
    plain, ent = calls
    assert _grids(plain) == [] and _grids(ent) == ["ent_coef=0.001"]
    for call in (plain, ent):
        assert call[call.index("--preset") + 1] == "default" and "--algo" not in call
        assert call[call.index("--out-dir") + 1].endswith("out/ppo_default")
        assert call[call.index("--total-steps") + 1] == "10000000"


def test_unknown_setting_word_is_refused(tmp_path):
    p, calls = _run(tmp_path, "ppo_tuned")
    assert p.returncode == 2 and calls == []
    assert "'ppo_tuned'" in p.stderr
