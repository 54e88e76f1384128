"""Presets as data files: resolved exactly as the Python presets they replaced (tests/data/preset_golden.json,
written by tests/data/make_preset_golden.py at 190f9f7), user files, and one-line errors for bad files."""
import json
from pathlib import Path

import pytest

from ppo_control import presets
from ppo_control.config import ConfigError, make_config

GOLDEN = json.loads((Path(__file__).parent / "data" / "preset_golden.json").read_text())
# task rows changed on purpose since the golden file was written, each by a measurement its row's source names:
# case -> the fields it now sets (config and applied task-row fields alike), or the error it now raises
_ANT = {"anneal_lr": False, "lr_adapt_kl": 0.01}
_SWIMMER = {"gamma": 0.9999, "norm_reward": False, "value_norm": True, "adv_every_epoch": True, "vf_coef": 0.25,
            "num_steps": 1024, "num_minibatches": 32}
CHANGED = {"tuned|Ant-v5|": _ANT, "tuned|Humanoid-v5|": _ANT, "tuned|Humanoid-v5|grpo": _ANT, "tuned|Swimmer-v5|": _SWIMMER,
           "tuned|Swimmer-v5|grpo": {"error": "adv_every_epoch is a PPO option (GRPO has no critic); remove "
                                              "--adv-every-epoch"}}


def _expected(case: str) -> dict:
    want = GOLDEN["cases"][case]
    change = CHANGED.get(case)
    if change is None or "error" in change:
        return change or want
    return {"config": {**want["config"], **change},
            "env_overrides_applied": {**want["env_overrides_applied"], **change}}


@pytest.mark.parametrize("case", sorted(GOLDEN["cases"]))
def test_every_preset_and_task_resolves_as_the_python_presets_did(case):
    preset, env_id, algo = case.split("|")
    want = _expected(case)
    kw = dict(**({"env_id": env_id} if env_id else {}), **({"algo": algo} if algo else {}))
    if "error" in want:
        with pytest.raises(ConfigError) as e:
            make_config(preset, **kw)
        assert str(e.value) == want["error"]
        return
    cfg = make_config(preset, **kw)
    got = cfg.to_dict()
    expected = {**GOLDEN["defaults"], **want["config"]}
    assert {k: got[k] for k in expected} == expected
    assert {k: list(v) if isinstance(v, tuple) else v
            for k, v in presets.applied_env_overrides(cfg).items()} == want["env_overrides_applied"]


def test_the_golden_file_covers_every_preset_and_ten_tasks():
    assert {c.split("|")[0] for c in GOLDEN["cases"]} == set(presets.NAMES) == {"classic", "default", "fast",
                                                                                  "tuned", "grpo"}
    assert len(GOLDEN["cases"]) == 4 * 10 * 2 + 10 + 1  # PPO presets with and without --algo grpo, grpo, grpo+ppo


def _toml(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, tuple):
        return "[" + ", ".join(map(str, v)) + "]"
    return f'"{v}"' if isinstance(v, str) else repr(v)


AS_THEY_ARE = "the preset's settings as they are"


def test_docs_list_every_task_row_with_its_settings_and_source():
    docs = (Path(__file__).resolve().parents[1] / "docs" / "presets.md").read_text()
    for name in presets.NAMES:
        for env_id, row in presets.load(name).tasks.items():
            settings = ", ".join(f"`{k} = {_toml(v)}`" for k, v in row.settings.items()) or AS_THEY_ARE
            line = f"- **{env_id}**: {settings}. Source: {row.source}"
            assert line in docs.split(f"### {name}\n", 1)[1].split("\n### ")[0], (name, env_id)
