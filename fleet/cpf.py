"""CPF numbers (Brazil's individual taxpayer id): validation, masking and lists of them.

People type a CPF with or without its mask (`123.456.789-09`, `12345678909`,
`123 456 789 09`); the API is sent the eleven digits. A CPF is personal data
(LGPD): anywhere but a lookup's own page it is shown masked, `***.456.789-**`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

LENGTH = 11
_SEPARATORS = str.maketrans("", "", ".-/ \u00a0\t")
_DIGITS = re.compile(r"[0-9]{11}")


def normalize(text: str) -> str:
    """The digits without the mask's dots, hyphen or spaces: `123.456.789-09` → `12345678909`."""
    return text.strip().translate(_SEPARATORS)


def check_digits(first_nine: str) -> str:
    """The two check digits of the nine-digit base of a CPF."""
    digits = [int(d) for d in first_nine]
    for _ in range(2):
        weight = len(digits) + 1
        total = sum(d * (weight - i) for i, d in enumerate(digits))
        digits.append(total * 10 % 11 % 10)
    return f"{digits[-2]}{digits[-1]}"


def is_valid(text: str) -> bool:
    """Whether `text` is a CPF: eleven digits, check digits right, not all the same digit."""
    cpf = normalize(text)
    if not _DIGITS.fullmatch(cpf) or len(set(cpf)) == 1:
        return False
    return check_digits(cpf[:9]) == cpf[9:]


def display(text: str) -> str:
    """The CPF with its mask, `123.456.789-09` (the full value: for its owner's eyes only)."""
    cpf = normalize(text)
    return f"{cpf[:3]}.{cpf[3:6]}.{cpf[6:9]}-{cpf[9:]}"


def mask(text: str) -> str:
    """The CPF as lists and logs show it: `***.456.789-**`."""
    cpf = normalize(text)
    if len(cpf) != LENGTH:
        return "***.***.***-**"
    return f"***.{cpf[3:6]}.{cpf[6:9]}-**"


@dataclass(frozen=True, slots=True)
class InvalidLine:
    """A line of a list that is not a CPF: where it was, what it said, and why."""

    number: int
    text: str = field(repr=False)  # what was typed: maybe a CPF with a typo
    problem: str = ""  # "digits" (not eleven digits) or "check" (check digits wrong)


@dataclass(slots=True)
class CpfList:
    """A pasted or uploaded list, read: the CPFs (first occurrence, in order) and the rest.

    Reprs leave the CPFs out: they end up in logs (a template's debug line, a traceback).
    """

    cpfs: list[str] = field(default_factory=list, repr=False)
    invalid: list[InvalidLine] = field(default_factory=list)
    repeated: int = 0


def read_list(lines: list[str]) -> CpfList:
    """Sort each non-empty line into a CPF, a repeat of one, or an invalid line."""
    found = CpfList()
    seen: set[str] = set()
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        if not text:
            continue
        cpf = normalize(text)
        if not _DIGITS.fullmatch(cpf):
            found.invalid.append(InvalidLine(number, text, "digits"))
        elif not is_valid(cpf):
            found.invalid.append(InvalidLine(number, text, "check"))
        elif cpf in seen:
            found.repeated += 1
        else:
            seen.add(cpf)
            found.cpfs.append(cpf)
    return found
