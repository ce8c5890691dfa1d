"""deploy/grafana/fleet-portal-dashboard.json: every query names only metrics the portal
exposes (tests.deploy.metric_names), every metric has a panel, every panel reads the
`${datasource}` variable, and promtool parses every query."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from tests.conftest import ROOT
from tests.deploy.conftest import promtool_run
from tests.deploy.metric_names import EXPOSED, family, names_in

DASHBOARD = ROOT / "deploy" / "grafana" / "fleet-portal-dashboard.json"
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
# What Grafana puts in a query before Prometheus sees it.
_GRAFANA_VARIABLES = {"$__rate_interval": "1m", "$instance": ".*"}


def _dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())


def _panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel but the rows, also those inside a collapsed row."""
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            yield from panel.get("panels", [])
        else:
            yield panel


def _queries(dashboard: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(where, PromQL) for each panel's targets and each query variable."""
    for panel in _panels(dashboard):
        for target in panel["targets"]:
            yield panel["title"], target["expr"]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            query = variable["query"]
            yield f"${variable['name']}", query["query"] if isinstance(query, dict) else query


def test_every_query_names_only_metrics_the_portal_exposes():
    unknown = {
        (where, name)
        for where, promql in _queries(_dashboard())
        for name in names_in(promql) - EXPOSED
    }

    assert unknown == set()


def test_every_metric_the_portal_exposes_has_a_panel():
    used = {family(name) for _, promql in _queries(_dashboard()) for name in names_in(promql)}

    assert {family(name) for name in EXPOSED} - used == set()


def test_every_panel_has_queries_on_the_datasource_variable():
    dashboard = _dashboard()
    variables = {variable["name"]: variable for variable in dashboard["templating"]["list"]}

    assert dashboard["schemaVersion"] >= 39
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    for panel in _panels(dashboard):
        assert panel["datasource"] == DATASOURCE, panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == DATASOURCE, panel["title"]


def test_panels_do_not_overlap_and_ids_are_unique():
    panels = _dashboard()["panels"]
    cells: dict[tuple[int, int], str] = {}
    for panel in panels:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in cells, f"{panel['title']} overlaps {cells[(x, y)]}"
                cells[(x, y)] = panel["title"]

    assert len({panel["id"] for panel in panels}) == len(panels)


def test_promtool_parses_every_query(promtool, tmp_path):
    # Each query as a recording rule: `promtool check rules` parses its PromQL.
    rules = []
    for number, (_, promql) in enumerate(_queries(_dashboard())):
        if promql.startswith("label_values("):  # Grafana's own function, not PromQL
            promql = promql.removeprefix("label_values(").rsplit(",", 1)[0]
        for variable, value in _GRAFANA_VARIABLES.items():
            promql = promql.replace(variable, value)
        rules.append({"record": f"dashboard_query_{number}", "expr": promql})
    # JSON is YAML: promtool reads it as a rule file.
    (tmp_path / "queries.yml").write_text(json.dumps({"groups": [{"name": "q", "rules": rules}]}))

    output = promtool_run(promtool, "check", "rules", "queries.yml", cwd=tmp_path)

    assert f"SUCCESS: {len(rules)} rules found" in output
