"""What a made-up fine is about: an infraction of the Brazilian traffic code (CTB) and
where it was committed.

Amounts are those of CTB art. 258 (Lei 13.281/2016): leve R$ 88,38, média
R$ 130,16, grave R$ 195,23 and gravíssima R$ 293,47, which some articles
multiply (2, 3, 5 or 10 times). Each infraction carries its real tier, article and
enquadramento code (SENATRAN's `NNN-NN`), and a weight: how often a fleet
meets it (speeding and parking often, a street race seldom).
"""

from __future__ import annotations

import random
import zlib
from datetime import date, timedelta
from decimal import Decimal
from typing import NamedTuple


class Tier(NamedTuple):
    severity: str  # as the authorities write it
    points: int  # on the driver's licence (CTB art. 259)
    amount: Decimal  # R$, before any multiplier


LEVE = Tier("leve", 3, Decimal("88.38"))
MEDIA = Tier("média", 4, Decimal("130.16"))
GRAVE = Tier("grave", 5, Decimal("195.23"))
GRAVISSIMA = Tier("gravíssima", 7, Decimal("293.47"))
TIERS = (LEVE, MEDIA, GRAVE, GRAVISSIMA)
MULTIPLIERS = (1, 2, 3, 5, 10)  # of a gravíssima, as the articles below use them


class Infraction(NamedTuple):
    description: str
    code: str  # enquadramento
    article: str
    tier: Tier
    multiplier: int
    weight: int
    # The driver's conduct (CTB art. 257 §3): the owner indicates who drove. False for an
    # infraction of the owner's own (§2: registration, licensing), with no one to indicate.
    driver_conduct: bool = True

    @property
    def amount(self) -> str:
        """R$ with two decimals and a point, as the payload's `amount` carries it."""
        return f"{self.tier.amount * self.multiplier:.2f}"


INFRACTIONS = (
    Infraction(
        "Dirigir sem atenção ou sem os cuidados indispensáveis à segurança",
        "520-70", "art. 169", LEVE, 1, 4,
    ),
    Infraction(
        "Parar o veículo no passeio ou sobre faixa destinada a pedestres",
        "562-21", "art. 182, VI", LEVE, 1, 3,
    ),
    Infraction(
        "Transitar em velocidade superior à máxima permitida em até 20%",
        "745-50", "art. 218, I", MEDIA, 1, 30,
    ),
    Infraction(
        "Dirigir o veículo utilizando-se de telefone celular",
        "736-62", "art. 252, VI", MEDIA, 1, 5,
    ),
    Infraction(
        "Estacionar em local e horário proibidos especificamente pela sinalização",
        "555-00", "art. 181, XVIII", MEDIA, 1, 8,
    ),
    Infraction(
        "Transitar em velocidade superior à máxima permitida em mais de 20% até 50%",
        "746-30", "art. 218, II", GRAVE, 1, 12,
    ),
    Infraction(
        "Deixar o condutor de usar o cinto de segurança",
        "518-51", "art. 167", GRAVE, 1, 5,
    ),
    Infraction(
        "Estacionar em desacordo com a regulamentação (estacionamento rotativo)",
        "554-12", "art. 181, XVII", GRAVE, 1, 8,
    ),
    Infraction(
        "Estacionar em local e horário de estacionamento e parada proibidos pela sinalização",
        "556-80", "art. 181, XIX", GRAVE, 1, 4,
    ),
    Infraction(
        "Avançar o sinal vermelho do semáforo",
        "605-01", "art. 208", GRAVISSIMA, 1, 8,
    ),
    Infraction(
        "Dirigir o veículo manuseando telefone celular",
        "763-32", "art. 252, parágrafo único", GRAVISSIMA, 1, 5,
    ),
    Infraction(
        "Conduzir o veículo registrado que não esteja devidamente licenciado",
        "659-92", "art. 230, V", GRAVISSIMA, 1, 3, False,
    ),
    Infraction(
        "Conduzir motocicleta sem usar capacete de segurança",
        "703-01", "art. 244, I", GRAVISSIMA, 1, 1,
    ),
    Infraction(
        "Dirigir veículo com CNH de categoria diferente da do veículo",
        "503-71", "art. 162, III", GRAVISSIMA, 2, 2,
    ),
    Infraction(
        "Dirigir veículo sem possuir CNH, Permissão para Dirigir ou ACC",
        "501-00", "art. 162, I", GRAVISSIMA, 3, 1,
    ),
    Infraction(
        "Transitar em velocidade superior à máxima permitida em mais de 50%",
        "747-10", "art. 218, III", GRAVISSIMA, 3, 2,
    ),
    Infraction(
        "Ultrapassar pela contramão linha de divisão de fluxos opostos, contínua amarela",
        "596-70", "art. 203, V", GRAVISSIMA, 5, 2,
    ),
    Infraction(
        "Dirigir sob a influência de álcool",
        "516-91", "art. 165", GRAVISSIMA, 10, 1,
    ),
    Infraction(
        "Recusar-se a ser submetido a teste do etilômetro (bafômetro)",
        "757-90", "art. 165-A", GRAVISSIMA, 10, 1,
    ),
    Infraction(
        "Disputar corrida",
        "524-00", "art. 173", GRAVISSIMA, 10, 1,
    ),
)  # fmt: skip
_INFRACTION_WEIGHTS = tuple(infraction.weight for infraction in INFRACTIONS)

# Where a fleet's fines are committed: cities of every region and their state (UF),
# weighted roughly by their traffic.
PLACES = (
    ("São Paulo", "SP", 20),
    ("Campinas", "SP", 5),
    ("Ribeirão Preto", "SP", 3),
    ("Guarulhos", "SP", 3),
    ("Rio de Janeiro", "RJ", 10),
    ("Niterói", "RJ", 2),
    ("Belo Horizonte", "MG", 7),
    ("Uberlândia", "MG", 2),
    ("Curitiba", "PR", 5),
    ("Londrina", "PR", 2),
    ("Porto Alegre", "RS", 4),
    ("Caxias do Sul", "RS", 2),
    ("Florianópolis", "SC", 2),
    ("Joinville", "SC", 2),
    ("Salvador", "BA", 4),
    ("Recife", "PE", 3),
    ("Fortaleza", "CE", 3),
    ("Brasília", "DF", 4),
    ("Goiânia", "GO", 3),
    ("Vitória", "ES", 2),
    ("Campo Grande", "MS", 1),
    ("Cuiabá", "MT", 1),
    ("Manaus", "AM", 2),
    ("Belém", "PA", 2),
    ("São Luís", "MA", 1),
    ("Natal", "RN", 1),
)
_PLACE_WEIGHTS = tuple(weight for _city, _state, weight in PLACES)
AWAY_FROM_HOME = 0.2  # share of a vehicle's fines committed outside its home city


INDICATION_DAYS = 30  # CTB art. 257 §7: from the notice, to indicate the driver


def infraction(rng: random.Random) -> Infraction:
    return rng.choices(INFRACTIONS, weights=_INFRACTION_WEIGHTS)[0]


def place(rng: random.Random, plate: str) -> tuple[str, str]:
    """Where a fine of the vehicle `plate` was committed, as (city, UF): mostly its home
    city (the same for a plate in every batch), now and then anywhere."""
    if rng.random() < AWAY_FROM_HOME:
        city, state, _weight = rng.choices(PLACES, weights=_PLACE_WEIGHTS)[0]
        return city, state
    # Without its fifth character, the one that differs between a vehicle's old plate and
    # the Mercosul one; crc32, not hash(): a str's hash changes from one process to the next.
    home = random.Random(zlib.crc32(f"{plate[:4]}{plate[5:]}".encode()))
    city, state, _weight = home.choices(PLACES, weights=_PLACE_WEIGHTS)[0]
    return city, state


def notice_facts(reference: str, city: str, state: str, notice: date) -> dict[str, object]:
    """What a notice of infraction (`reference`, issued on `notice` for a fine committed in
    `city`/`state`) says beyond the spec, as the emulator's full mode sends it: who issued
    it (`authority`), the notice's date (`noticeDate`), and, for seven notices in ten, the
    deadline to indicate the driver printed on it (`indicationDeadline`: 30 to 45 days
    after) and the slip's due date (`paymentDueDate`); ISO days. From the notice number
    alone (crc32, no draw of the batch's random numbers): the same notice says the same in
    every batch."""
    digest = zlib.crc32(reference.encode())
    # The state's traffic department, the federal highway police, the city's traffic agency.
    authorities = (f"DETRAN-{state}", f"DETRAN-{state}", "PRF", f"Prefeitura de {city}")
    facts: dict[str, object] = {
        "authority": authorities[digest % len(authorities)],
        "noticeDate": notice.isoformat(),
    }
    if (digest >> 3) % 10 < 7:
        deadline = notice + timedelta(days=INDICATION_DAYS + (digest >> 7) % 16)
        facts["indicationDeadline"] = deadline.isoformat()
        facts["paymentDueDate"] = (deadline + timedelta(days=(digest >> 11) % 31)).isoformat()
    return facts
