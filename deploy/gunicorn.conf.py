"""gunicorn's configuration for the portal in production.

    gunicorn -c deploy/gunicorn.conf.py

from any directory (options given on the command line win over these).
`GUNICORN_WORKERS` (default 4) and `GUNICORN_BIND` (default 127.0.0.1:8000,
behind the reverse proxy) come from the environment; everything the portal
itself reads is in the README.

The logs never carry the webhook token of `/webhooks/fleet/<token>/` nor a query
string: the access log writes the path without its query, and every access and
error line goes through the portal's redaction (`portal.gunicorn_logging`).
Each access line ends with the request's id; with `LOG_FORMAT=json` every line,
gunicorn's and the portal's, is one JSON object.
Django's own log lines (a 404's "Not Found: <path>") go to gunicorn's error log
too, already redacted by the portal's LOGGING.
"""

from __future__ import annotations

import os
from pathlib import Path

import gunicorn.http.wsgi


def _whole_number(name: str, *, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) < 1:
        raise SystemExit(f"{name} must be a whole number, at least 1.")
    return int(raw)


# The project's directory, wherever gunicorn is started from (and on sys.path).
chdir = str(Path(__file__).resolve().parent.parent)
wsgi_app = "portal.wsgi:application"
proc_name = "fleet-portal"
bind = [os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")]
workers = _whole_number("GUNICORN_WORKERS", default=4)
# A page that waits on the Fleet API (its read timeout, a Retry-After) ends well within
# this; a worker silent for longer is stuck and replaced.
timeout = 90
# On a restart or a stop, requests under way get this long to finish.
graceful_timeout = 30

accesslog = "-"
errorlog = "-"
# When errorlog is a file, the workers' stderr (Django's log lines) goes to it too.
capture_output = True
logger_class = "portal.gunicorn_logging.RedactingLogger"
# The combined format without the query string (%(U)s is the path alone), the
# referrer (another page's address, with its query) and the Basic-auth user name; and
# last, the request's id, as the portal answered it (its X-Request-Id header).
access_log_format = (
    '%(h)s - - %(t)s "%(m)s %(U)s %(H)s" %(s)s %(b)s %(M)sms "%(a)s" %({x-request-id}o)s'
)

# Metrics (portal.lib.metrics): every worker, and `manage.py db_worker` beside them, writes its
# counts to PROMETHEUS_MULTIPROC_DIR (the units' runtime directory, deploy/systemd), and
# /metrics sums the files. Counts of workers that ended stay in the sum, as counters must.
_metrics_dir = os.environ.get("PROMETHEUS_MULTIPROC_DIR", "").strip()
if _metrics_dir:
    Path(_metrics_dir).mkdir(parents=True, exist_ok=True)


def child_exit(server: object, worker: object) -> None:
    if _metrics_dir:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)  # type: ignore[attr-defined,no-untyped-call]


# gunicorn answers with `Server: gunicorn`, and the reverse proxy passes it on: name
# no software instead. `gunicorn.http.wsgi` copied `gunicorn.SERVER` when it was
# imported, so it is set there; the workers, forked later, inherit it.
gunicorn.http.wsgi.SERVER = "fleet-portal"
