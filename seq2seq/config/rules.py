"""The shape every section's value rules share: a list of (broken?, message) checked in order."""

from __future__ import annotations

Rule = tuple[bool, str]  # (the rule is broken, the message that says which key and what to do)


def broken(rules: list[Rule]) -> list[str]:
    """The messages of the broken rules, in the order the rules are listed."""
    return [message for is_broken, message in rules if is_broken]
