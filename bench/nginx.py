"""Debian's nginx in front of the portal, with deploy/nginx as shipped (the soak and tests/deploy).

The nginx.conf written here is only the frame a host provides: its ports,
temporary folders, the upstream's address and the static folder. Every rule
(timeouts, buffering, body limits, rate limits, logging, static caching) comes
from the shipped deploy/nginx/fleet-portal-http.conf and fleet-portal-server.conf,
which the frame includes from the repository as they are.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from bench.servers import LOOPBACK, ROOT, ServerFailed, free_port, stop

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
_START_TIMEOUT = 10.0


@dataclass
class Nginx:
    url: str
    port: int
    process: subprocess.Popen[bytes]
    access_log: Path
    error_log: Path


def nginx_frame(
    folder: Path, *, port: int, upstream: int | list[int], static: Path, connections: int = 512
) -> str:
    """The nginx.conf of a host: the shipped rules included, listening on `port` in front of
    gunicorn on `upstream` (or of several, one a host, as a load balancer is), its files in
    `folder`."""
    servers = " ".join(
        f"server {LOOPBACK}:{each};"
        for each in ([upstream] if isinstance(upstream, int) else upstream)
    )
    temp = folder / "nginx-temp"
    for name in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (temp / name).mkdir(parents=True, exist_ok=True)
    deploy = ROOT / "deploy" / "nginx"
    # As root, nginx's workers would run as nobody, who cannot read temporary folders.
    user = "user root;" if os.geteuid() == 0 else ""
    return f"""
{user}
worker_processes 1;
daemon off;
pid {folder}/nginx.pid;
error_log {folder}/nginx-error.log warn;
events {{ worker_connections {connections}; }}
http {{
    include /etc/nginx/mime.types;
    client_body_temp_path {temp}/body;
    proxy_temp_path {temp}/proxy;
    fastcgi_temp_path {temp}/fastcgi;
    uwsgi_temp_path {temp}/uwsgi;
    scgi_temp_path {temp}/scgi;
    include {deploy}/fleet-portal-http.conf;
    upstream fleet_portal {{ {servers} keepalive 16; }}
    server {{
        listen {LOOPBACK}:{port};
        access_log {folder}/nginx-access.log fleet_portal;
        set $fleet_static {static}/;
        include {deploy}/fleet-portal-server.conf;
    }}
}}
"""


def start_nginx(
    folder: Path, *, upstream: int | list[int], static: Path, connections: int = 512
) -> Nginx:
    """nginx on a free loopback port in front of gunicorn on `upstream`; returns once it
    accepts connections (raises `ServerFailed` if it stops or does not)."""
    port = free_port()
    config = folder / "nginx.conf"
    config.write_text(
        nginx_frame(folder, port=port, upstream=upstream, static=static, connections=connections)
    )
    log = folder / "nginx-stderr.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [NGINX, "-c", str(config), "-p", str(folder)], stdout=output, stderr=subprocess.STDOUT
        )
    deadline = time.monotonic() + _START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServerFailed(f"nginx stopped: {log.read_text()}")
        try:
            with socket.create_connection((LOOPBACK, port), timeout=1):
                break
        except OSError:
            time.sleep(0.05)
    else:
        stop(process)
        raise ServerFailed("nginx did not start")
    return Nginx(
        f"http://{LOOPBACK}:{port}",
        port,
        process,
        folder / "nginx-access.log",
        folder / "nginx-error.log",
    )
