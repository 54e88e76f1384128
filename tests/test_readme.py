"""The README's code cannot rot: its Python blocks run, its test command is CI's, its commands parse.

A block opened with plain ```python is a program and is run (every ``total_steps=N`` made small).
"""
import configparser
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
SMALL_STEPS = 2048  # one classic-preset iteration: the snippet runs in seconds, not minutes
TEST_COMMAND = "python -m pytest -q -p no:cacheprovider tests"
SMOKE_ENV = "InvertedPendulum-v5"

# Commands and options the README documents that the CLI gains on other branches (presets as files,
# suites, report). Empty this set once they are merged: every README command is then parsed for real.


def blocks(text: str, info: str) -> list:
    """The code blocks whose info string is exactly ``info`` (e.g. "python", "bash")."""
    return re.findall(rf"^```{info}[ \t]*\n(.*?)^```", text, re.S | re.M)


def shrink(code: str) -> str:
    """The block with every ``total_steps=N`` set to a small number."""
    return re.sub(r"total_steps\s*=\s*[\d_]+(?:\.\d*)?(?:e\d+)?", f"total_steps={SMALL_STEPS}", code)


def bash_lines(text: str = README) -> list:
    """Every line of the bash blocks, continuation lines joined, comments dropped."""
    lines = []
    for b in blocks(text, "bash"):
        lines += [ln.split(" #")[0].strip() for ln in b.replace("\\\n", " ").splitlines()]
    return [ln for ln in lines if ln]


def commands(text: str = README, inline: bool = True) -> list:
    """Every ``ppo-control ...`` in the bash blocks (and inline code) of ``text``, as argv lists."""
    cmds = []
    for line in bash_lines(text) + (re.findall(r"`(ppo-control [^`]+)`", text) if inline else []):
        for part in re.split(r"&&|;|\|", line):
            words = shlex.split(part)
            while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):   # MUJOCO_GL=egl ppo-control ...
                words = words[1:]
            if words[:1] == ["ppo-control"] and len(words) > 1:
                cmds.append(words)
    return cmds


@pytest.mark.parametrize("index", range(len(blocks(README, "python"))))
@pytest.mark.slow
def test_readme_python_block_runs(tmp_path, index):
    code = shrink(blocks(README, "python")[index])
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"README python block {index} failed:\n{code}\n{r.stderr[-3000:]}"


def test_readme_has_a_python_block():
    assert blocks(README, "python")


def test_shrink_sets_total_steps():
    assert shrink("make_config('classic', total_steps=200_000, seed=3)") == \
        f"make_config('classic', total_steps={SMALL_STEPS}, seed=3)"


def test_readme_test_command_is_what_ci_runs():
    ci = [ln.split("#")[0].strip() for ln in (ROOT / ".ci" / "run").read_text().splitlines()
          if ln.strip().startswith("python -m pytest")]
    assert ci == [TEST_COMMAND]
    assert TEST_COMMAND in bash_lines(), "the test command must be a line of its own in a bash block"
    first = next(ln for ln in bash_lines() if "pytest" in ln)
    assert first == TEST_COMMAND, f"the first pytest command in the README must be CI's, not {first!r}"


def test_readme_fast_lane_deselects_a_registered_marker():
    runs = [shlex.split(ln) for ln in bash_lines() if ln.startswith("python -m pytest")]
    lanes = [w[3:] for w in runs if "-m" in w[3:]]          # a -m after "python -m pytest"
    assert len(lanes) == 1, runs
    expr = lanes[0][lanes[0].index("-m") + 1]
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    markers = {m.split(":")[0].strip() for m in cfg["tool:pytest"]["markers"].split("\n") if m.strip()}
    assert expr == "not slow" and "slow" in markers, (expr, markers)


def test_readme_commands_use_existing_subcommands_and_options():
    from ppo_control.cli import build_parser
    sub = next(a for a in build_parser()._actions if a.dest == "command").choices
    cmds = [c for c in commands() if c[1] != "--version"]
    assert len(cmds) >= 10, cmds
    for words in cmds:
        name = words[1]
        assert name in sub, f"README: unknown subcommand in {' '.join(words)}"
        options = {s for a in sub[name]._actions for s in a.option_strings}
        for w in words[2:]:
            flag = w.split("=")[0].strip("[]")
            if flag.startswith("--"):
                assert flag in options, f"README: {' '.join(words)}: {flag} is not an option of {name}"


@pytest.mark.parametrize("page", ["README.md", *sorted(p.name for p in (ROOT / "docs").glob("*.md"))])
def test_commands_parse(page):
    """argparse accepts each command of the README and of docs/' bash blocks as written (values and positionals
    included; inline code in docs/ may hold placeholders such as ``--preset P``)."""
    from ppo_control.cli import build_parser
    path = ROOT / page if page == "README.md" else ROOT / "docs" / page
    for words in commands(path.read_text(), inline=page == "README.md"):
        if "--help" in words:
            continue
        try:
            build_parser().parse_args(words[1:])
        except SystemExit as e:
            if e.code == 0 and words[1:] == ["--version"]:
                continue
            pytest.fail(f"{page}: `{' '.join(words)}` does not parse (exit {e.code})")


def test_readme_smoke_run_is_a_short_inverted_pendulum_run():
    from ppo_control.cli import build_parser
    smoke = [c for c in commands() if c[1] == "train" and SMOKE_ENV in c]
    assert len(smoke) == 1, smoke
    args = build_parser().parse_args(smoke[0][1:])
    assert args.env_id == SMOKE_ENV and args.total_steps == 50_000, args
    # the learning check trains the same task to >= 900 in 49,152 steps (tests/test_learning.py)
    assert "--preset" not in smoke[0] and "--algo" not in smoke[0]
