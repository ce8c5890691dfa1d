"""deploy/prometheus as shipped, through Prometheus' own promtool: the configuration with
its rules, the rules, and their unit tests (fleet-portal-rules.test.yml: each alert fires
on a series that should fire it, with the labels and text an on-call engineer gets, and
not on one that should not)."""

from __future__ import annotations

import re
import shutil

from tests.conftest import ROOT
from tests.deploy.conftest import promtool_run
from tests.deploy.metric_names import EXPOSED, names_in

PROMETHEUS = ROOT / "deploy" / "prometheus"
CONFIG = PROMETHEUS / "prometheus.yml"
RULES = PROMETHEUS / "fleet-portal-rules.yml"
RULE_TESTS = PROMETHEUS / "fleet-portal-rules.test.yml"
# Where the configuration reads METRICS_TOKEN on the Prometheus host: promtool checks
# that the file exists, so the check runs on a copy that names a file of the test's.
TOKEN_FILE = "/etc/prometheus/fleet-portal-metrics-token"


def _without_comments(text: str) -> str:
    return re.sub(r"#.*$", "", text, flags=re.MULTILINE)


def test_the_configuration_and_the_rules_it_loads_are_valid(promtool, tmp_path):
    text = CONFIG.read_text()
    assert text.count(f"credentials_file: {TOKEN_FILE}") == 1
    token = tmp_path / "metrics-token"
    token.write_text("a-token\n")
    (tmp_path / "prometheus.yml").write_text(text.replace(TOKEN_FILE, str(token)))
    # rule_files is relative to the configuration, as in /etc/prometheus/ once installed.
    shutil.copy(RULES, tmp_path / RULES.name)

    output = promtool_run(promtool, "check", "config", "prometheus.yml", cwd=tmp_path)

    assert "SUCCESS: 1 rule files found" in output
    assert re.search(rf"Checking {RULES.name}\n\s+SUCCESS: \d+ rules found", output)


def test_the_rules_are_valid(promtool):
    output = promtool_run(promtool, "check", "rules", RULES.name, cwd=PROMETHEUS)

    assert "SUCCESS" in output


def test_every_alert_passes_its_unit_tests(promtool):
    output = promtool_run(promtool, "test", "rules", RULE_TESTS.name, cwd=PROMETHEUS)

    assert "SUCCESS" in output


def test_every_alert_has_unit_tests():
    alerts = set(re.findall(r"^\s*- alert: (\w+)$", RULES.read_text(), flags=re.MULTILINE))
    tested = set(re.findall(r"alertname: (\w+)", RULE_TESTS.read_text()))

    assert len(alerts) >= 7
    assert alerts - tested == set()


def test_the_rules_and_their_tests_use_only_the_metrics_the_portal_exposes():
    rules = _without_comments(RULES.read_text())
    recorded = set(re.findall(r"^\s*- record: (\S+)$", rules, flags=re.MULTILINE))

    assert recorded
    assert names_in(rules) - EXPOSED - recorded == set()
    assert names_in(_without_comments(RULE_TESTS.read_text())) - EXPOSED - recorded == set()
