"""CSV exports of the fines and notifications lists, fed through the real receiver."""

from __future__ import annotations

import csv
import io

import pytest

from tests.views.test_fines import DOCUMENT, ENGLISH, HTMX, a_fine, deliver

pytestmark = pytest.mark.django_db

PORTUGUESE = {"Accept-Language": "pt-BR"}
ID = 10  # a fine's column "Id in the fleet platform"


@pytest.fixture
def manager_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("marcos", password="pw-123456"))
    return client


def read(response, delimiter=";") -> list[list[str]]:
    text = b"".join(response.streaming_content).decode("utf-8")
    assert text.startswith("\ufeff")  # Excel reads the accents as UTF-8
    return list(csv.reader(io.StringIO(text[1:]), delimiter=delimiter))


def test_the_fines_export_is_every_fine_of_the_filter_as_brazilian_excel_reads_it(
    manager_client, client
):
    deliver(client, a_fine(1, treated=True, carPlate="abc1234"))
    deliver(
        client,
        a_fine(
            2,
            carPlate="ABC1D23",
            autoInfracao="E010000002",
            amount="1293.5",
            occurredAt="2025-12-31T21:14:00Z",
            link_frame=DOCUMENT,
        ),
    )

    response = manager_client.get("/fines/export.csv", headers=PORTUGUESE)

    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith('attachment; filename="fines-')
    header, *rows = read(response)
    assert header == [
        "Placa", "Infração", "Auto", "Cometida em", "Valor (R$)", "Tratamento",
        "Documento oficial", "Boleto", "Recebida em", "Atualizada em", "Id na plataforma da frota",
        "Id do condutor", "Condutor", "Como o condutor é conhecido", "Candidatos",
        "Trocou de mãos depois de", "Trocou de mãos antes de",
        "Código da infração", "Gravidade", "Pontos na CNH", "Cidade", "UF", "Órgão autuador",
        "Indicação do condutor", "Indicar o condutor até", "Como o prazo de indicação é conhecido",
        "Vencimento do boleto", "Como o vencimento é conhecido",
    ]  # fmt: skip
    assert [row[0] for row in rows] == ["ABC1D23", "ABC-1234"]  # untreated first
    new = rows[0]
    assert new[1:6] == ["Infração 2", "E010000002", "31/12/2025 18:14", "1293,50", "Não tratada"]
    assert new[6:8] == [DOCUMENT, "https://boletos.example/1"]
    assert new[10] == "2"
    assert rows[1][5] == "Tratada"


def test_an_amount_or_a_moment_that_could_not_be_read_is_exported_as_sent(manager_client, client):
    deliver(client, a_fine(3, amount="cento e trinta", occurredAt="ontem à tarde"))

    _header, row = read(manager_client.get("/fines/export.csv", headers=PORTUGUESE))

    assert row[3:5] == ["ontem à tarde", "cento e trinta"]


def test_the_export_keeps_the_filters_of_the_list(manager_client, client):
    deliver(client, a_fine(1, treated=True, carPlate="ABC1234"))
    deliver(client, a_fine(2, carPlate="ABC1234"))
    deliver(client, a_fine(3, carPlate="XYZ9876"))

    response = manager_client.get("/fines/export.csv", {"treated": "0", "plate": "abc1c34"})

    _header, *rows = read(response)
    assert [row[ID] for row in rows] == ["2"]  # the same vehicle, under its Mercosul plate
    _header, *rows = read(manager_client.get("/fines/export.csv", {"q": "infração 3"}))
    assert [row[ID] for row in rows] == ["3"]


def test_the_export_uses_commas_points_and_iso_moments_in_english(manager_client, client):
    deliver(client, a_fine(1, amount="1293.47", occurredAt="2025-12-31T21:14:00Z"))

    header, row = read(manager_client.get("/fines/export.csv", headers=ENGLISH), delimiter=",")

    assert header[:5] == [
        "Plate", "Infraction", "Notice", "Committed on (yyyy-mm-dd hh:mm)", "Amount (R$)"
    ]  # fmt: skip
    assert header[8:10] == ["Received (yyyy-mm-dd hh:mm)", "Updated (yyyy-mm-dd hh:mm)"]
    assert row[3:6] == ["2025-12-31 18:14", "1293.47", "Untreated"]  # São Paulo's time


def test_the_eighth_of_june_is_never_the_sixth_of_august(manager_client, client):
    """A date that reads differently in the two conventions: 8 June, 12:49 in São Paulo.
    The page shows it day first in both languages, 24-hour; the Portuguese export as
    Brazilian Excel reads it, the English one in ISO 8601."""
    deliver(client, a_fine(1, occurredAt="2026-06-08T15:49:00Z", carPlate="ABC1D23"))

    for headers in (ENGLISH, PORTUGUESE):
        page = manager_client.get("/fines/", headers=headers).text
        assert "08/06/2026 12:49" in page
        assert "06/08/2026" not in page
        assert "p.m." not in page
    _header, portuguese = read(manager_client.get("/fines/export.csv", headers=PORTUGUESE))
    _header, english = read(manager_client.get("/fines/export.csv", headers=ENGLISH), ",")
    assert portuguese[3] == "08/06/2026 12:49"
    assert english[3] == "2026-06-08 12:49"


def test_text_a_spreadsheet_would_run_as_a_formula_is_written_as_text(manager_client, client):
    deliver(client, a_fine(1, description='=HYPERLINK("https://evil.example","Pagar")'))
    deliver(client, a_fine(2, description="-2+3", amount="not a number"))

    _header, *rows = read(manager_client.get("/fines/export.csv"))

    descriptions = {row[ID]: row[1] for row in rows}
    assert descriptions == {"1": '\'=HYPERLINK("https://evil.example","Pagar")', "2": "'-2+3"}
    assert {row[ID]: row[4] for row in rows}["2"] == "not a number"


# Spreadsheets skip leading blanks and line breaks before they look for a formula.
FORMULAS_AFTER_BLANKS = [" =1+1", "\t@SUM(A1)", "\n-2+3", "\r+1", " \t\r\n=cmd|' /C calc'!A0"]


def test_formula_text_after_leading_blanks_and_line_breaks_is_written_as_text(
    manager_client, client
):
    for id, title in enumerate(FORMULAS_AFTER_BLANKS, start=1):
        deliver(client, {"notification": {"id": id, "treated": False, "title": title}})
    deliver(client, {"notification": {"id": 99, "treated": False, "title": "\nVistoria =ok"}})

    _header, *rows = read(manager_client.get("/notifications/export.csv"))

    titles = {row[-1]: row[1] for row in rows}
    expected = {str(id): f"'{title}" for id, title in enumerate(FORMULAS_AFTER_BLANKS, start=1)}
    assert titles == expected | {"99": "\nVistoria =ok"}  # the cell otherwise as written


def test_a_negative_amount_stays_a_number_in_each_language(manager_client, client):
    deliver(client, a_fine(1, amount="-12.5", description=" -taxa"))

    _header, row = read(manager_client.get("/fines/export.csv", headers=PORTUGUESE))
    _header, english = read(manager_client.get("/fines/export.csv", headers=ENGLISH), ",")

    assert (row[1], row[4]) == ("' -taxa", "-12,50")  # a number Excel in pt-BR reads as one
    assert (english[1], english[4]) == ("' -taxa", "-12.50")


def test_the_notifications_export(manager_client, client):
    deliver(client, {"notification": {"id": 1, "treated": True, "title": "Vistoria feita"}})
    licensing = {"id": 2, "treated": False, "title": "Licenciamento", "message": "Até 30/11"}
    deliver(client, {"notification": licensing | {"carPlate": "abc1234"}})

    response = manager_client.get("/notifications/export.csv", headers=PORTUGUESE)

    assert response["Content-Disposition"].startswith('attachment; filename="notifications-')
    header, *rows = read(response)
    assert header == [
        "Placa", "Título", "Mensagem", "Tratamento", "Recebida em", "Atualizada em",
        "Id na plataforma da frota",
    ]  # fmt: skip
    assert [row[:4] for row in rows] == [
        ["ABC-1234", "Licenciamento", "Até 30/11", "Não tratada"],
        ["", "Vistoria feita", "", "Tratada"],
    ]
    filtered = read(manager_client.get("/notifications/export.csv", {"treated": "1"}))
    assert [row[-1] for row in filtered[1:]] == ["1"]


@pytest.mark.parametrize(
    ("page", "export"),
    [("/fines/", "/fines/export.csv"), ("/notifications/", "/notifications/export.csv")],
)
def test_the_export_link_follows_the_filters_htmx_applies(manager_client, page, export):
    whole = manager_client.get(page, {"treated": "0"}).text
    fragment = manager_client.get(page, {"treated": "1"}, headers=HTMX).text

    assert f'id="records-export" href="{export}?treated=0" data-testid="export-csv">' in whole
    assert "hx-swap-oob" not in whole
    assert (
        f'id="records-export" href="{export}?treated=1" data-testid="export-csv" '
        'hx-swap-oob="true">'
    ) in fragment


def test_the_exports_require_login(client):
    for path in ("/fines/export.csv", "/notifications/export.csv"):
        assert client.get(path).status_code == 302


@pytest.mark.django_db(transaction=True)
def test_an_export_reads_its_rows_as_the_database_finds_them(client):
    """On PostgreSQL a cursor declared outside a transaction is held past its commit (WITH
    HOLD): the database reads and keeps the whole answer before the first row (at ten
    million fines, minutes, and on after the download is given up). An export's cursor
    is declared inside one: not held, its rows read as the list's index gives them. On
    SQLite no transaction is taken."""
    from django.db import connection

    from fleet.services.fine_exports import fine_export
    from fleet.services.fines import notification_export
    from fleet.services.scopes import WHOLE_FLEET

    for number in (1, 2):
        deliver(client, a_fine(number))
        deliver(client, {"notification": {"id": number, "treated": False, "title": "Recall"}})
    for records in (fine_export(scope=WHOLE_FLEET), notification_export(scope=WHOLE_FLEET)):
        next(records)  # the first row read: the cursor is open, or read to its end
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT is_holdable FROM pg_cursors")
                # The fines export reads a chunk ahead (its drivers' names in one query):
                # two fines are the whole answer, read and closed before the first row.
                assert cursor.fetchall() in ([(False,)], [])
                cursor.execute("SELECT count(*) FROM pg_cursors WHERE is_holdable")
                assert cursor.fetchone() == (0,)
        else:
            # The portal's SQLite transactions begin IMMEDIATE: one around an export would
            # hold the write lock for its length, and the receiver and the worker wait.
            assert not connection.in_atomic_block
        assert len(list(records)) == 1
