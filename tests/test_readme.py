"""The README's code cannot rot: its Python blocks run, its test command is CI's, its commands parse.

A block opened with plain ```python is a program and is run (every ``total_steps=N`` made small);
an excerpt that cannot run alone is opened with ```python fragment (still highlighted as Python)
and is only parsed.
"""
import ast
import re
import textwrap
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
SMALL_STEPS = 2048  # one classic-preset iteration: the snippet runs in seconds, not minutes


def blocks(text: str, info: str) -> list:
    """The code blocks whose info string is exactly ``info`` (e.g. "python", "python fragment")."""
    return re.findall(rf"^```{info}[ \t]*\n(.*?)^```", text, re.S | re.M)


def shrink(code: str) -> str:
    """The block with every ``total_steps=N`` set to a small number."""
    return re.sub(r"total_steps\s*=\s*[\d_]+(?:\.\d*)?(?:e\d+)?", f"total_steps={SMALL_STEPS}", code)


@pytest.mark.parametrize("index", range(len(blocks(README, "python"))))
def test_readme_python_block_runs(tmp_path, index):
    code = shrink(blocks(README, "python")[index])
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"README python block {index} failed:\n{code}\n{r.stderr[-3000:]}"


def test_readme_has_a_python_block():
    assert blocks(README, "python")


@pytest.mark.parametrize("index", range(len(blocks(README, "python fragment"))))
def test_readme_python_fragment_parses(index):
    ast.parse(textwrap.dedent(blocks(README, "python fragment")[index]))


def test_readme_test_command_is_what_ci_runs():
    pattern = re.compile(r"python -m pytest[^\n`#&|;]*")
    readme = {m.strip() for m in pattern.findall(README)}
    ci = {m.strip() for m in pattern.findall((ROOT / ".ci" / "run").read_text())}
    assert len(ci) == 1 and readme == ci, (readme, ci)


def _commands() -> list:
    """Every ``ppo-control SUBCOMMAND ...`` in the README's bash blocks and inline code."""
    lines = []
    for b in blocks(README, "bash"):
        lines += b.replace("\\\n", " ").splitlines()
    lines += re.findall(r"`(ppo-control [^`]+)`", README)
    cmds = []
    for line in lines:
        for part in re.split(r"&&|;|\|", line.split(" #")[0]):
            words = part.split()
            if words[:1] == ["ppo-control"] and len(words) > 1:
                cmds.append(words)
    return cmds


def test_readme_commands_use_existing_subcommands_and_options():
    from ppo_control.cli import build_parser
    sub = next(a for a in build_parser()._actions if a.dest == "command").choices
    cmds = _commands()
    assert cmds
    for words in cmds:
        name = words[1]
        assert name in sub, f"README: unknown subcommand in {' '.join(words)}"
        options = {s for a in sub[name]._actions for s in a.option_strings}
        for w in words[2:]:
            flag = w.split("=")[0].strip("[]")
            if flag.startswith("--"):
                assert flag in options, f"README: {' '.join(words)}: {flag} is not an option of {name}"


def test_shrink_sets_total_steps():
    assert shrink("make_config('classic', total_steps=200_000, seed=3)") == \
        f"make_config('classic', total_steps={SMALL_STEPS}, seed=3)"
