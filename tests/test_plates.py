from __future__ import annotations

import pytest

from fleet import plates


@pytest.mark.parametrize(
    ("typed", "normal"),
    [
        ("abc-1234", "ABC1234"),
        ("ABC 1D23", "ABC1D23"),
        (" abc.1d23 ", "ABC1D23"),
        ("ABC1234", "ABC1234"),
    ],
)
def test_plates_are_normalized_whatever_the_typing(typed, normal):
    assert plates.normalize(typed) == normal


@pytest.mark.parametrize("plate", ["ABC1234", "abc-1234", "ABC1D23", "abc 1d23"])
def test_both_formats_are_valid(plate):
    assert plates.is_valid(plate)


@pytest.mark.parametrize(
    "plate",
    [
        "",
        "AB1234",
        "ABCD123",
        "ABC12345",
        "1BC1234",
        "ABC1DD3",
        "../key/generator",
        "ABC%2F1",
        "ÁBC1234",
    ],
)
def test_anything_else_is_not_a_plate(plate):
    assert not plates.is_valid(plate)


def test_old_plates_are_shown_with_a_hyphen_and_mercosul_ones_without():
    assert plates.display("abc1234") == "ABC-1234"
    assert plates.display("abc-1d23") == "ABC1D23"


@pytest.mark.parametrize(
    ("plate", "registration"),
    [
        ("ABC-1234", "ABC1C34"),
        ("abc 1034", "ABC1A34"),
        ("XYZ9999", "XYZ9J99"),
        ("ABC1C34", "ABC1C34"),  # already Mercosul
        ("abc1d23", "ABC1D23"),
        ("not a plate", "NOTAPLATE"),
        ("", ""),
    ],
)
def test_an_old_plate_and_the_mercosul_plate_that_replaced_it_are_one_registration(
    plate, registration
):
    assert plates.registration(plate) == registration


@pytest.mark.parametrize(
    ("plate", "old"),
    [
        ("ABC1C34", "ABC1234"),
        ("abc-1a00", "ABC1000"),
        ("ABC1J99", "ABC1999"),
        ("ABC1K99", None),  # K stands for no digit: a plate issued as Mercosul
        ("ABC1234", None),  # already old
        ("not a plate", None),
    ],
)
def test_the_old_plate_a_mercosul_plate_may_have_replaced(plate, old):
    assert plates.old_plate(plate) == old


@pytest.mark.parametrize(
    ("plate", "other"),
    [
        ("JVF-5559", "JVF5F59"),  # old → Mercosul
        ("jvf5f59", "JVF5559"),  # Mercosul → the old plate it may have replaced
        ("ABC1K23", None),  # a fifth letter past J stands for no digit: never an old plate
        ("JVF55", None),  # part of a plate
        ("", None),
    ],
)
def test_a_plates_other_spelling_is_the_same_vehicle_in_the_other_format(plate, other):
    assert plates.other_spelling(plate) == other
