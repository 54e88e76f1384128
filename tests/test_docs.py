"""README.md and docs/ speak to users, link to what exists, and show results tables copied from results/.

A results table sits between ``<!-- table: results/FILE.md -->`` and ``<!-- /table -->`` and must equal
the first markdown table of FILE (``ppo-control report`` fills the blocks); prose must not repeat it.
"""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MAKING_OF = re.compile(r"issue [0-9]|this round|previous round|the brief|session", re.I)
BLOCK = re.compile(r"<!-- table: (\S+) -->\n(.*?)<!-- /table -->", re.S)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
SEP = re.compile(r"^\|(\s*:?-{3,}:?\s*\|)+\s*$")
CI = re.compile(r"\[-?[\d,.]+, -?[\d,.]+\]")          # "[1,026, 1,436]": a bootstrap interval
THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?=x\b|%|[^\w.]|$)")   # 1,231 3.09x 95% -3.9; not 1M, v5

# Pages and results files that other branches add (docs/extending.md, docs/presets.md; the README's
# headline table as a results file). Empty these once merged: every link and block is then checked.


def first_table(text: str):
    lines = text.splitlines()
    for i in range(len(lines) - 1):
        if lines[i].startswith("|") and SEP.match(lines[i + 1].strip()):
            j = i
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            return "\n".join(lines[i:j])
    return None


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", "")).replace(" ", "-")


def anchors(page: Path) -> set:
    return {slug(m) for m in re.findall(r"^#+ (.+)$", page.read_text(), re.M)}


def name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def test_slug_matches_github():
    assert slug("Presets compared: classic, default, fast") == "presets-compared-classic-default-fast"
    assert slug("GAE lambda x entropy coefficient") == "gae-lambda-x-entropy-coefficient"
    assert slug("Signals, Ctrl-C and failures") == "signals-ctrl-c-and-failures"


def test_first_table_skips_prose_and_stops_at_the_table_end():
    text = "# t\n| not | a table\n\n| a | b |\n|---|---:|\n| 1 | 2 |\ntext\n| c | d |\n|---|---|\n"
    assert first_table(text) == "| a | b |\n|---|---:|\n| 1 | 2 |"


def test_readme_is_at_most_250_lines():
    n = len((ROOT / "README.md").read_text().splitlines())
    assert n <= 250, f"README.md has {n} lines"


@pytest.mark.parametrize("page", PAGES, ids=name)
def test_no_sentence_about_the_making_of_the_package(page):
    hits = [ln for ln in page.read_text().splitlines() if MAKING_OF.search(ln)]
    assert not hits, hits


@pytest.mark.parametrize("page", PAGES, ids=name)
def test_every_relative_link_resolves(page):
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, frag = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        rel = dest.relative_to(ROOT).as_posix() if dest.is_relative_to(ROOT) else str(dest)
        assert dest.exists(), f"{name(page)}: link {target} -> {rel} does not exist"
        if frag and dest.suffix == ".md":
            assert frag in anchors(dest), f"{name(page)}: link {target}: no heading #{frag} in {rel}"


@pytest.mark.parametrize("page", PAGES, ids=name)
def test_table_blocks_equal_the_first_table_of_their_results_file(page):
    text = page.read_text()
    assert text.count("<!-- table: ") == text.count("<!-- /table -->") == len(BLOCK.findall(text))
    for src, body in BLOCK.findall(text):
        assert src.startswith("results/") and src.endswith(".md"), src
        expected = first_table((ROOT / src).read_text())
        assert expected is not None, f"{src} holds no table"
        assert body.strip() == expected, f"{name(page)}: the block of {src} differs; run ppo-control report"


@pytest.mark.parametrize("page", PAGES, ids=name)
def test_results_tables_sit_in_blocks(page):
    """A table row with a confidence interval outside a block is a copied number that can go stale."""
    outside = BLOCK.sub("", page.read_text())
    rows = [ln for ln in outside.splitlines() if ln.startswith("|") and CI.search(ln)]
    assert not rows, rows


def test_readme_headline_rows_link_to_files_that_hold_their_numbers():
    blocks = BLOCK.findall((ROOT / "README.md").read_text())
    assert len(blocks) == 1, "the README shows one results table"
    rows = [r for r in blocks[0][1].splitlines()[2:] if r.strip()]
    assert len(rows) >= 15, rows
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        links = LINK.findall(cells[-1])
        assert len(links) == 1 and links[0].startswith("results/"), row
        source = THOUSANDS.sub("", (ROOT / links[0]).read_text())
        numbers = NUMBER.findall(THOUSANDS.sub("", " ".join(cells[1:-1])))
        assert numbers, row
        for n in numbers:
            assert re.search(rf"(?<![\d.]){re.escape(n)}(?!\d|\.\d)", source), \
                f"README headline: {n} (row {cells[0]!r}) is not in {links[0]}"
