"""The drivers the portal can name: those with a `Driver` record (a name typed in the
admin, or given to the demo fleet's drivers) and those fines are attributed to; and the
pickers that find one among hundreds of thousands by a part of the name or by the id.

A picker reads the words of the names (`DriverWord`), by ranges of an index: what it
costs does not grow with the number of drivers, only with the choices it shows.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from django.core.cache import cache
from django.db import transaction
from django.db.models import OuterRef, QuerySet
from django.utils.translation import gettext

from fleet.models import Driver, DriverBasis, DriverSpan, DriverWord, Fine
from fleet.models.drivers import WORD_LENGTH
from fleet.services.scopes import WHOLE_FLEET, VehicleScope, driver_seen, scope_drivers
from portal.lib import formatting

# Words of a name kept, and of a search read: beyond, they only narrow what is found.
NAME_WORDS = 8
SEARCH_WORDS = 4
# Driver ids are positive and fit the fines' column, and what anyone types.
_MAX_ID = 2**31
# "Ana Souza (1234)": a choice as a picker writes it back in its field.
_CHOSEN = re.compile(r"\((\d{1,10})\)\s*$")
_WORD = re.compile(r"[^\W_]+")
# Drivers whose words are written in one transaction.
_CHUNK = 500


@dataclass(frozen=True, slots=True)
class DriverChoice:
    """A driver a picker offers: the id and the name the portal knows ("" if none)."""

    driver_id: int
    name: str

    @property
    def shown(self) -> str:
        """The driver as the pages name them ("Ana Souza", or "Driver 1234")."""
        return formatting.driver(self.driver_id, self.name)

    @property
    def label(self) -> str:
        """What the picker's field holds once it is chosen: read back as the id."""
        return f"{self.name} ({self.driver_id})" if self.name else str(self.driver_id)


def name_words(text: str) -> list[str]:
    """The words of `text` as the index keeps them: without accents, in lower case, each
    once, in order ("José da Silva" → ["jose", "da", "silva"])."""
    bare = unicodedata.normalize("NFKD", text)
    bare = "".join(char for char in bare if not unicodedata.combining(char)).casefold()
    words: list[str] = []
    for word in _WORD.findall(bare):
        word = word[:WORD_LENGTH]
        if word not in words:
            words.append(word)
    return words


def driver_words_write(drivers: Iterable[Driver]) -> None:
    """Index the words of these drivers' names again (after their names changed), a
    chunk of drivers to a short transaction."""
    drivers = list(drivers)
    for start in range(0, len(drivers), _CHUNK):
        chunk = drivers[start : start + _CHUNK]
        with transaction.atomic():
            DriverWord.objects.filter(driver__in=chunk).delete()
            DriverWord.objects.bulk_create(
                DriverWord(driver=driver, word=word)
                for driver in chunk
                for word in name_words(driver.name)[:NAME_WORDS]
            )
    if drivers:
        driver_names_changed()


# A number that changes whenever a driver's name is written or removed, in the shared
# cache: what a page keeps with the names it shows (the vehicles list) is looked up by it.
_NAMES_VERSION = "fleet:driver-names-version"


def driver_names_version() -> int:
    """The version of the drivers' names (`driver_names_changed`)."""
    return int(cache.get_or_set(_NAMES_VERSION, 0, timeout=None) or 0)


def driver_names_changed() -> None:
    """Count a change of the names once the transaction that made it commits. A page that
    reads the version, then the names, keeps them under a version they are current for:
    before the commit, the names as they were under the version as it was."""
    transaction.on_commit(_names_version_next)


def _names_version_next() -> None:
    try:
        cache.incr(_NAMES_VERSION)
    except ValueError:  # not set yet, or evicted
        cache.set(_NAMES_VERSION, 1, timeout=None)


def driver_id_typed(text: str) -> int | None:
    """The driver id `text` gives: the digits of an id, or a choice as a picker writes it
    ("Ana Souza (1234)"); None if it gives none."""
    text = text.strip()
    digits = text if text.isascii() and text.isdigit() else None
    if digits is None and (chosen := _CHOSEN.search(text)):
        digits = chosen[1]
    if digits is None or len(digits) > 10:
        return None
    value = int(digits)
    return value if 0 < value < _MAX_ID else None


def drivers_find(
    *, text: str, scope: VehicleScope = WHOLE_FLEET, limit: int = 10
) -> list[DriverChoice]:
    """Up to `limit` drivers `text` names: an id (the driver, named or not), or words
    each of which begins a word of the name ("ana sou" finds "Ana Souza"), names that
    begin closest to the words first. Outside the whole fleet, only the drivers `scope`
    sees (`driver_seen`; no name for an id it does not see)."""
    if (driver_id := driver_id_typed(text)) is not None:
        name = driver_names([driver_id]).get(driver_id, "")
        if name and not scope.whole_fleet and not driver_seen(scope, driver_id):
            name = ""
        return [DriverChoice(driver_id, name)]
    words = sorted(name_words(text)[:SEARCH_WORDS], key=len, reverse=True)
    if not words or limit < 1:
        return []
    # Through the longest word's range of the index, in its order; a driver two of whose
    # words begin with it comes twice. Each condition only when there is one: an
    # `IN (every driver)` made SQLite read the drivers first (25 ms at 126,000 names).
    ranged = _beginning(words[0])
    for word in words[1:]:
        ranged = ranged.filter(driver_id__in=_beginning(word).values("driver_id"))
    if not scope.whole_fleet:
        ranged = ranged.filter(scope_drivers(scope, OuterRef("driver__driver_id")))
    found = ranged.order_by("word", "driver_id").values_list(
        "word", "driver__driver_id", "driver__name"
    )[: limit * 2]
    choices: dict[int, DriverChoice] = {}
    for word, found_id, name in found:
        if word.startswith(words[0]):  # a collation may order other words in the range
            choices.setdefault(found_id, DriverChoice(found_id, name))
    return list(choices.values())[:limit]


def driver_label(driver_id: int, scope: VehicleScope = WHOLE_FLEET) -> str:
    """What the picker's field holds for `driver_id` (`DriverChoice.label`), its name only
    where `scope` sees the driver: a form filled in with a fine's attributed driver."""
    found = drivers_find(text=str(driver_id), scope=scope, limit=1)
    return found[0].label if found else str(driver_id)


def _beginning(word: str) -> QuerySet[DriverWord]:
    """The index's words that begin with `word`: a range, which every database reads from
    the index (a LIKE would not, whatever the collation)."""
    return DriverWord.objects.filter(word__gte=word, word__lt=prefix_end(word))


def prefix_end(text: str) -> str:
    """The first text after every text that begins with `text`: the end of its range in an
    index, which every database reads (a LIKE would not, whatever the collation)."""
    return text[:-1] + chr(ord(text[-1]) + 1)


def driver_names_add(*, names: Mapping[int, str]) -> int:
    """Give these drivers these names, each only if the driver has none yet (a name
    typed in the admin stays); how many were named."""
    named = set(Driver.objects.filter(driver_id__in=names).values_list("driver_id", flat=True))
    missing = [Driver(driver_id=id_, name=name) for id_, name in names.items() if id_ not in named]
    # Ignoring conflicts: a driver named meanwhile, by someone else, keeps that name.
    Driver.objects.bulk_create(missing, ignore_conflicts=True)
    added = [driver.driver_id for driver in missing]
    for start in range(0, len(added), _CHUNK):
        driver_words_write(Driver.objects.filter(driver_id__in=added[start : start + _CHUNK]))
    return len(missing)


def driver_names(driver_ids: list[int]) -> dict[int, str]:
    """The names the portal knows for these drivers (`Driver`, typed in the admin)."""
    return dict(Driver.objects.filter(driver_id__in=driver_ids).values_list("driver_id", "name"))


def fines_named(fines: Iterable[Fine]) -> None:
    """Give each of `fines` its driver's name where the portal knows one
    (`Fine.driver_name`), and to those whose vehicle changed hands around then their two
    candidates (`Fine.driver_candidates`): two reads for a page of them."""
    fines = list(fines)
    uncertain = [fine for fine in fines if fine.driver_basis == DriverBasis.UNCERTAIN]
    spans = (
        {
            pk: (previous, driver)
            for pk, previous, driver in DriverSpan.objects.filter(
                pk__in=[fine.driver_span_id for fine in uncertain if fine.driver_span_id]
            ).values_list("pk", "previous_driver_id", "driver_id")
        }
        if uncertain
        else {}
    )
    wanted = {fine.driver_id for fine in fines} | {i for pair in spans.values() for i in pair}
    names = driver_names([driver_id for driver_id in wanted if driver_id is not None])
    for fine in fines:
        if fine.driver_id is not None:
            fine.driver_name = names.get(fine.driver_id, "")
    for fine in uncertain:
        pair = spans.get(fine.driver_span_id or 0)
        if pair is not None:
            fine.driver_candidates = tuple(
                formatting.driver(i, names.get(i, "")) if i is not None else gettext("nobody")
                for i in pair
            )
