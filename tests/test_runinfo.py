"""Provenance: `dirty` says whether the code differs from the recorded commit, not whether results are being
written beside it."""
import shutil
import subprocess

import pytest

from ppo_control.runinfo import dirty_paths, git_commit


def test_dirty_paths_skip_results_and_follow_renames():
    porcelain = (" M results/runs/grpo_10m/grpo/runner.jsonl\n"
                 "M  results/grpo_10m/targets.md\n"
                 " M ppo_control/grpo.py\n"
                 "R  old/name.py -> results/moved.py\n"
                 "R  results/a.md -> docs/a.md\n"
                 ' M "README with space.md"\n')
    assert dirty_paths(porcelain) == ["ppo_control/grpo.py", "docs/a.md", "README with space.md"]
    assert dirty_paths("") == []


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_git_commit_is_clean_while_results_change_and_dirty_when_code_does(tmp_path):
    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)
    git("init", "-q")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "results").mkdir()
    (tmp_path / "pkg" / "code.py").write_text("x = 1\n")
    (tmp_path / "results" / "metrics.csv").write_text("step,return\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init")
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True).stdout.strip()

    assert git_commit(tmp_path / "pkg") == {"commit": sha, "dirty": False}
    (tmp_path / "results" / "metrics.csv").write_text("step,return\n1,2.0\n")  # a run writing beside us
    (tmp_path / "untracked.txt").write_text("scratch")
    assert git_commit(tmp_path / "pkg") == {"commit": sha, "dirty": False}
    (tmp_path / "pkg" / "code.py").write_text("x = 2\n")
    assert git_commit(tmp_path / "pkg") == {"commit": sha, "dirty": True}


def test_git_commit_outside_a_repository_says_unknown(tmp_path):
    info = git_commit(tmp_path)
    assert info["commit"] is None and info["dirty"] is None


def test_cpu_id_reads_family_model_and_widest_simd():
    from ppo_control.runinfo import cpu_id
    text = ("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n"
            "model name\t: AMD EPYC 9R14\nflags\t\t: fpu sse4_2 avx avx2 avx512f\n\n"
            "processor\t: 1\nvendor_id\t: Other\n")
    assert cpu_id(text) == {"cpu_vendor": "AuthenticAMD", "cpu_family": "25", "cpu_model_number": "17",
                            "cpu_simd": "avx512f"}
    assert cpu_id("vendor_id : GenuineIntel\nflags : sse4_2 avx2\n")["cpu_simd"] == "avx2"
