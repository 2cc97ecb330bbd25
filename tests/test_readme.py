"""The README is for users: short, the two quick-start commands and nothing else in that block, links
that resolve, and no dates or issue numbers in it or in the documentation (measured figures live in
the generated docs/results.md, which alone may carry a date)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
MAX_LINES = 300
QUICK_START = [
    'python3 -m venv .venv && .venv/bin/pip install -e ".[demo]" && .venv/bin/fpgashare demo',
    "bash tests/run.sh",
]
#: the pattern the project forbids outside generated results: an issue number or an ISO date
DATED = re.compile(r"issue [0-9]+|20[0-9]{2}-[0-9]{2}-[0-9]{2}", re.IGNORECASE)
GENERATED = {REPO / "docs" / "results.md"}


def section(text: str, title: str) -> str:
    """The body of the ``## title`` section."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    assert match, f"README has no '## {title}' section"
    return match.group(1)


def code_blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced code block."""
    return re.findall(r"^```(\w*)\n(.*?)^```", text, re.MULTILINE | re.DOTALL)


def test_readme_is_short() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines; the design belongs in docs/"


def test_quick_start_is_exactly_the_two_commands() -> None:
    blocks = code_blocks(section(README.read_text(), "Quick start"))
    assert len(blocks) == 1, "the quick start has one code block"
    commands = [line for line in blocks[0][1].splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert commands == QUICK_START
    # The second command is the one CI runs: the README promises nothing weaker than CI checks.
    assert QUICK_START[1] in (REPO / ".ci" / "run").read_text()


def test_no_dates_or_issue_numbers_in_readme_and_docs() -> None:
    pages = [README, REPO / "mkdocs.yml", *sorted((REPO / "docs").rglob("*.md"))]
    found = [f"{path.relative_to(REPO)}:{n}: {line.strip()}"
             for path in pages if path not in GENERATED
             for n, line in enumerate(path.read_text().splitlines(), 1) if DATED.search(line)]
    assert not found, "dates or issue numbers (figures go to the generated docs/results.md):\n" + "\n".join(found)


def test_readme_links_resolve() -> None:
    text = README.read_text()
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if not re.match(r"[a-z]+://", t)]
    assert local, "the README links to the documentation"
    missing = [t for t in local if not (REPO / t).exists()]
    assert not missing, f"README links to files that do not exist: {missing}"


def test_the_dated_pattern_catches_what_it_must() -> None:
    """The check above is only as good as its pattern: it must see both forms it forbids."""
    # (built at run time, so the test itself holds no date or issue number for the grep to find)
    assert DATED.search(f"measured {2026}-{12:02d}-{4:02d}") and DATED.search("see Issue " + str(16))
    assert not DATED.search("RTSS 2016, 4 slots, 1080p30")


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(actions[0].choices) if actions else {}


def _options(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string of ``parser`` and of its subcommands, recursively."""
    found = {s for a in parser._actions for s in a.option_strings}
    for sub in _subcommands(parser).values():
        found |= _options(sub)
    return found


def test_the_commands_table_is_the_cli() -> None:
    """``fpgashare --help`` is the truth: the README's table names every command the CLI has, and
    every option a row mentions is one that command (or one of its subcommands) takes."""
    from fpgashare.cli.main import build_parser

    commands = _subcommands(build_parser())
    rows = re.findall(r"^\| `fpgashare ([a-z]+)[^`]*` \|(.*)\|$", section(README.read_text(), "Commands"), re.MULTILINE)
    assert {name for name, _ in rows} == set(commands), "README's commands table differs from fpgashare --help"
    for name, text in rows:
        mentioned = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", text))
        unknown = mentioned - _options(commands[name])
        assert not unknown, f"README: fpgashare {name} has no option {sorted(unknown)}"
