"""The HTML of the vendor's web application (Portuguese, as the vendor's app is).

Two pages: the logged-in app and the expired-link page. Both post their
height to the parent window so an embedding iframe can size itself, and
both carry `data-fleet-*` markers for tests to find what they show.
"""

from __future__ import annotations

from html import escape

from emulator.fleet import Fleet

_STYLE = """
body { margin: 0; font: 15px/1.5 system-ui, sans-serif; color: #1f2933; background: #f5f7fa; }
header { background: #0b5394; color: #fff; padding: 12px 20px; font-weight: 600; }
main { padding: 20px; max-width: 960px; }
.cards { display: flex; gap: 12px; margin: 16px 0; }
.card { background: #fff; border: 1px solid #d9e2ec; border-radius: 6px; padding: 12px 16px; }
.card strong { display: block; font-size: 22px; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid #e4e7eb; }
.inactive { color: #9aa5b1; }
.notice { background: #fff; border-left: 4px solid #d64545; padding: 12px 16px; }
"""

# Lets an embedding page size its iframe to the content and see its state
# (`logged-in`, `expired`: see the README).
_HEIGHT_SCRIPT = """
(function () {
  function postHeight() {
    var height = document.documentElement.scrollHeight;
    var main = document.querySelector("main");
    var state = main ? main.getAttribute("data-fleet-state") : null;
    parent.postMessage({"type": "fleet-app:height", "height": height, "state": state}, "*");
  }
  window.addEventListener("load", postHeight);
  if ("ResizeObserver" in window) { new ResizeObserver(postHeight).observe(document.body); }
})();
"""

_SHOWN_VEHICLES = 8


def app_page(*, email: str, name: str, fleet: Fleet) -> str:
    rows = "".join(
        f'<tr class="{"" if vehicle.active == "1" else "inactive"}">'
        f"<td>{escape(vehicle.car_plate)}</td><td>{escape(vehicle.model)}</td>"
        f"<td>{vehicle.year}</td><td>{'Ativo' if vehicle.active == '1' else 'Inativo'}</td></tr>"
        for vehicle in fleet.vehicles[:_SHOWN_VEHICLES]
    )
    body = f"""
<main data-fleet-state="logged-in">
  <p data-fleet-user="{escape(email)}">Conectado como <strong>{escape(email)}</strong>
     ({escape(name)})</p>
  <div class="cards">
    <div class="card"><strong>{len(fleet.vehicles)}</strong>veículos</div>
    <div class="card"><strong>{fleet.active_count}</strong>ativos</div>
    <div class="card"><strong>{len(fleet.vehicles) - fleet.active_count}</strong>inativos</div>
  </div>
  <table>
    <thead><tr><th>Placa</th><th>Modelo</th><th>Ano</th><th>Situação</th></tr></thead>
    <tbody>{rows}</tbody>
  </table>
</main>"""
    return _document("Fleet · Minha frota", body)


def expired_page() -> str:
    body = """
<main data-fleet-state="expired">
  <div class="notice">
    <h1>Link expirado</h1>
    <p>Este link de acesso já foi usado ou expirou. Volte ao portal e abra o
       aplicativo de novo para receber um link novo.</p>
  </div>
</main>"""
    return _document("Fleet · Link expirado", body)


def not_found_page() -> str:
    body = """
<main data-fleet-state="not-found">
  <div class="notice"><h1>Página não encontrada</h1></div>
</main>"""
    return _document("Fleet · Página não encontrada", body)


def _document(title: str, body: str) -> str:
    return f"""<!doctype html>
<html lang="pt-BR">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title>
<style>{_STYLE}</style>
</head>
<body>
<header>Fleet · Gestão de frotas</header>
{body}
<script>{_HEIGHT_SCRIPT}</script>
</body>
</html>
"""
