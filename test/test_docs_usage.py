"""The usage lines the docs show (untagged blocks that start with `safety-monitor COMMAND`) agree with the
command's own parser: every option shown exists, a usage that does not end in `...` shows every option,
and an option's argument is named as `--help` names it. A newcomer copies these lines; an option the
page lacks or a name `--help` spells otherwise is where they trip."""

from __future__ import annotations

import argparse
import re

import pytest
from test_docs import PARSED, Lang

from safety_monitor.cli import build_parser

_OPTION = re.compile(r"(--[a-z][a-z-]*)(?:\s+\[?([A-Z][A-Z_]*)\b)?")


def _usages() -> list[tuple[str, str]]:
    """(where, text) of each usage: a line starting `safety-monitor`, with the indented lines under it."""
    usages = []
    for page, (blocks, _) in PARSED.items():
        for block in blocks:
            if block.lang is not Lang.OTHER or not re.match(r"safety-monitor [a-z]+ ", block.text):  # not output
                continue
            for number, chunk in enumerate(re.split(r"\n(?=safety-monitor )", block.text.strip())):
                usages.append((f"{page.name}:{block.line + 1 + number}", " ".join(chunk.split())))
    return usages


def _command(parser: argparse.ArgumentParser, words: list[str]) -> argparse.ArgumentParser:
    """The sub-command parser the usage's leading words name (`specs check` is two)."""
    for word in words:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs or word not in subs[0].choices:
            break
        parser = subs[0].choices[word]
    return parser


def _metavar(action: argparse.Action) -> str | None:
    if isinstance(action.metavar, str):
        return action.metavar
    return None if action.choices is not None or action.nargs == 0 else action.dest.upper()


USAGES = _usages()


def test_the_docs_show_usages() -> None:
    assert len(USAGES) >= 5, USAGES


@pytest.mark.parametrize(("where", "usage"), USAGES, ids=[where for where, _ in USAGES])
def test_usage_agrees_with_the_parser(where: str, usage: str) -> None:
    parser = _command(build_parser(), usage.split()[1:])
    options = {s: a for a in parser._actions for s in a.option_strings if s.startswith("--") and s != "--help"}
    shown = {flag: word for flag, word in _OPTION.findall(usage)}
    problems = [f"{flag}: no such option" for flag in shown if flag not in options]
    if not usage.endswith(" ..."):
        problems += [f"{flag}: not shown" for flag in options if flag not in shown]
    problems += [
        f"{flag} {word}: --help says {flag} {_metavar(options[flag])}"
        for flag, word in shown.items()
        if word and flag in options and _metavar(options[flag]) not in (None, word)
    ]
    assert not problems, f"{where}: `{parser.prog}` usage disagrees with its parser: {problems}"
