"""Debian's Prometheus beside the soak: it scrapes every host's `/metrics` (the shipped
scrape job, pointed at the soak's gunicorns on loopback) every second and evaluates the
shipped alert rules (deploy/prometheus), so that the soak compares the metrics with its
own counts and sees the worker-lag alert fire and resolve.

Each host is a target of its own, scraped at its gunicorn as deploy/prometheus says a
scaled-out deployment does: through a load balancer, each scrape would reach another
host and the counters would jump.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from bench.servers import LOOPBACK, ROOT, ServerFailed, free_port, stop

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
RULES = ROOT / "deploy" / "prometheus" / "fleet-portal-rules.yml"
JOB = "fleet-portal"
_START_TIMEOUT = 30.0


@dataclass
class Prometheus:
    url: str
    process: subprocess.Popen[bytes]

    def query(self, expression: str) -> list[dict[str, Any]]:
        """The instant vector `expression` gives now: [{"metric": {...}, "value": float}]."""
        answer = requests.get(f"{self.url}/api/v1/query", params={"query": expression}, timeout=10)
        answer.raise_for_status()
        return [
            {"metric": row["metric"], "value": float(row["value"][1])}
            for row in answer.json()["data"]["result"]
        ]

    def total(self, expression: str, by: str) -> dict[str, float]:
        """`sum by (by) (expression)`, as {label value: number}."""
        return {
            row["metric"].get(by, ""): row["value"]
            for row in self.query(f"sum by ({by}) ({expression})")
        }

    def alerts(self) -> list[dict[str, Any]]:
        answer = requests.get(f"{self.url}/api/v1/alerts", timeout=10)
        answer.raise_for_status()
        alerts: list[dict[str, Any]] = answer.json()["data"]["alerts"]
        return alerts

    def alert_state(self, name: str) -> str:
        """ "firing", "pending" or "inactive" for the alert rule `name`."""
        states = {alert["state"] for alert in self.alerts() if alert["labels"]["alertname"] == name}
        return "firing" if "firing" in states else "pending" if states else "inactive"

    def scraped_since(self, moment: float) -> bool:
        """Whether every target has been scraped since `moment` (Unix seconds)."""
        answer = requests.get(f"{self.url}/api/v1/targets", timeout=10)
        answer.raise_for_status()
        targets = answer.json()["data"]["activeTargets"]
        return bool(targets) and all(
            target["health"] == "up" and _parsed(target["lastScrape"]) > moment
            for target in targets
        )

    def wait_for_scrape(self, *, timeout: float = 30.0) -> None:
        """Until every target has been scraped after now."""
        now = time.time()
        deadline = time.monotonic() + timeout
        while not self.scraped_since(now):
            if time.monotonic() > deadline:
                raise ServerFailed("Prometheus did not scrape every host")
            time.sleep(0.5)


def _parsed(moment: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(moment.replace("Z", "+00:00")).timestamp()


def start_prometheus(folder: Path, *, targets: list[str], token: str) -> Prometheus:
    """Prometheus on a free loopback port scraping `targets` (host:port of each gunicorn)
    with the metrics token, evaluating the shipped rules every second."""
    if not Path(PROMETHEUS).exists():
        raise ServerFailed("prometheus is missing: `make prometheus` installs Debian's package")
    home = folder / "prometheus"
    home.mkdir(parents=True, exist_ok=True)
    (home / "token").write_text(token)
    quoted = ", ".join(f'"{target}"' for target in targets)
    (home / "prometheus.yml").write_text(
        f"""
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - {RULES}
scrape_configs:
  - job_name: {JOB}
    metrics_path: /metrics
    authorization:
      type: Bearer
      credentials_file: {home / "token"}
    static_configs:
      - targets: [{quoted}]
"""
    )
    port = free_port()
    log = folder / "prometheus.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [
                PROMETHEUS,
                f"--config.file={home / 'prometheus.yml'}",
                f"--storage.tsdb.path={home / 'data'}",
                f"--web.listen-address={LOOPBACK}:{port}",
                "--log.level=warn",
            ],
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    url = f"http://{LOOPBACK}:{port}"
    deadline = time.monotonic() + _START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServerFailed(f"prometheus stopped:\n{log.read_text()[-3000:]}")
        try:
            if requests.get(f"{url}/-/ready", timeout=1).status_code == 200:
                return Prometheus(url, process)
        except requests.RequestException:
            pass
        time.sleep(0.2)
    stop(process)
    raise ServerFailed(f"prometheus did not start:\n{log.read_text()[-3000:]}")
