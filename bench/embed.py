"""What the embed page costs over the bare `POST /key/generator` it wraps.

`python -m bench.embed [--requests N] [--warmup N]` starts the emulator and
the portal (gunicorn, SQLite), logs a manager in, then times, interleaved in
one loop so that all three see the same machine:

- generator: `POST /key/generator` straight to the emulator, the baseline;
- embed: `GET /app/`, then `GET /app/frame` as htmx asks for it, through the
  portal, which mints a key upstream for that one load;
- healthz: `GET /healthz` through the same gunicorn, the portal's floor.

It prints p50, p95 and mean of each and the ratio embed / generator, and
exits 1 if any request failed (an embed without a fresh key is a failure).
"""

from __future__ import annotations

import argparse
import html
import re
import sqlite3
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import requests

from bench.portal_setup import (
    DEMO_FLEET_EMAIL,
    DEMO_FLEET_PASSWORD,
    portal_environment,
    portal_log_in,
    portal_prepare,
)
from bench.servers import (
    Server,
    bench_main,
    ensure_running,
    running_emulator,
    running_portal,
    upstream_session,
)
from bench.stats import Summary, summarize

WORKERS, THREADS = 2, 4
_IFRAME_SRC = re.compile(r"<iframe\b[^>]*\ssrc=\"([^\"]*)\"")

# What one probe timed (seconds, by row of the table) and why it failed, if it did.
type Outcome = tuple[dict[str, float], str | None]


@dataclass(slots=True)
class Target:
    """The two servers and a client for each, as the probes use them."""

    emulator: Server
    portal: Server
    upstream: requests.Session
    browser: requests.Session
    seen_keys: set[str] = field(default_factory=set)

    def fresh_key(self, value: str | None) -> str | None:
        """Why `value` is not a new accessKey, or None when it is one."""
        if not value:
            return "no key"
        try:
            uuid.UUID(value)
        except ValueError:
            return "a key that is not a UUID"
        if value in self.seen_keys:
            return "a key seen before"
        self.seen_keys.add(value)
        return None


@dataclass(slots=True)
class Samples:
    timings: dict[str, list[float]] = field(default_factory=dict)
    failures: Counter[str] = field(default_factory=Counter)
    embeds: int = 0


def probe_generator(target: Target) -> Outcome:
    started = time.perf_counter()
    response = target.upstream.post(
        f"{target.emulator.url}/key/generator",
        json={"email": DEMO_FLEET_EMAIL, "password": DEMO_FLEET_PASSWORD},
        timeout=10,
    )
    elapsed = time.perf_counter() - started
    if response.status_code != 200:
        return {}, f"generator: HTTP {response.status_code}"
    if problem := target.fresh_key(response.json().get("accessKey")):
        return {}, f"generator: {problem}"
    return {"generator": elapsed}, None


def probe_embed(target: Target) -> Outcome:
    """The page, then its iframe fragment, as a browser with htmx loads them."""
    page_url = f"{target.portal.url}/app/"
    started = time.perf_counter()
    page = target.browser.get(page_url, allow_redirects=False, timeout=10)
    page_done = time.perf_counter()
    frame = target.browser.get(
        f"{target.portal.url}/app/frame",
        headers={"HX-Request": "true", "HX-Target": "fleet-app", "HX-Current-URL": page_url},
        allow_redirects=False,
        timeout=30,
    )
    done = time.perf_counter()
    if page.status_code != 200:
        return {}, f"embed: /app/ HTTP {page.status_code}"
    if "accessKey" in page.text:
        return {}, "embed: /app/ carries a key"
    if frame.status_code != 200:
        return {}, f"embed: /app/frame HTTP {frame.status_code}"
    if "no-store" not in frame.headers.get("Cache-Control", ""):
        return {}, "embed: /app/frame is not no-store"
    match = _IFRAME_SRC.search(frame.text)
    src = html.unescape(match.group(1)) if match else ""
    if not src.startswith(f"{target.emulator.url}/app/login?"):
        return {}, "embed: /app/frame has no iframe into the fleet app"
    if problem := target.fresh_key(parse_qs(urlsplit(src).query).get("accessKey", [""])[0]):
        return {}, f"embed: {problem}"
    return {"embed": done - started, "page": page_done - started, "frame": done - page_done}, None


def probe_healthz(target: Target) -> Outcome:
    started = time.perf_counter()
    response = target.browser.get(f"{target.portal.url}/healthz", timeout=10)
    elapsed = time.perf_counter() - started
    if response.status_code != 200:
        return {}, f"healthz: HTTP {response.status_code}"
    return {"healthz": elapsed}, None


PROBES: Sequence[Callable[[Target], Outcome]] = (probe_generator, probe_embed, probe_healthz)


def measure(target: Target, *, rounds: int, warmup: int) -> Samples:
    """Run every probe once per round; keep the timings of the rounds after `warmup`."""
    samples = Samples()
    for round_number in range(warmup + rounds):
        # Rotate the order so that no probe always runs first after the others.
        shift = round_number % len(PROBES)
        for probe in [*PROBES[shift:], *PROBES[:shift]]:
            try:
                timings, failure = probe(target)
            except requests.RequestException as error:
                ensure_running(target.emulator)
                ensure_running(target.portal)
                name = probe.__name__.removeprefix("probe_")
                timings, failure = {}, f"{name}: {type(error).__name__}"
            if failure:
                samples.failures[failure] += 1
                continue
            samples.embeds += "embed" in timings
            if round_number >= warmup:
                for name, seconds in timings.items():
                    samples.timings.setdefault(name, []).append(seconds)
    return samples


def embed_mints_audited(database: Path) -> int:
    """How many successful embed mints the portal wrote to its audit trail."""
    with sqlite3.connect(database) as connection:
        (count,) = connection.execute(
            "SELECT count(*) FROM fleet_accesskeymint WHERE purpose = 'embed' "
            "AND outcome = 'minted'"
        ).fetchone()
    return int(count)


def report(samples: Samples, *, audited: int) -> None:
    rows = [
        ("POST /key/generator (baseline)", "generator"),
        ("embed: /app/ + /app/frame", "embed"),
        ("  GET /app/", "page"),
        ("  GET /app/frame (mints)", "frame"),
        ("GET /healthz (portal floor)", "healthz"),
    ]
    summaries: dict[str, Summary] = {
        key: summarize(label, samples.timings[key])
        for label, key in rows
        if len(samples.timings.get(key, [])) >= 2
    }
    print(f"\n{'':32}{'n':>5}{'p50 ms':>9}{'p95 ms':>9}{'mean ms':>9}")
    for summary in summaries.values():
        print(
            f"{summary.name:32}{summary.count:>5}"
            f"{summary.p50:>9.2f}{summary.p95:>9.2f}{summary.mean:>9.2f}"
        )
    generator, embed = summaries.get("generator"), summaries.get("embed")
    if generator and embed:
        print(
            f"\nembed / generator: {embed.p50 / generator.p50:.1f}x at p50, "
            f"{embed.mean / generator.mean:.1f}x on the mean"
        )
        print(
            f"The portal adds {embed.p50 - generator.p50:.1f} ms per embed (p50) over the "
            "upstream call: two Django requests (page render + session + auth), "
            "the account read and decrypt, and one short transaction (audit row, last success)."
        )
    if healthz := summaries.get("healthz"):
        print(f"Floor: a bare Django request through gunicorn takes {healthz.p50:.1f} ms (p50).")
    print(f"Audit trail: {audited} embed mints recorded for {samples.embeds} embeds.")
    if samples.failures:
        print("\nFAILURES:")
        for failure, count in samples.failures.most_common():
            print(f"  {count:>5}  {failure}")
    else:
        print("No failures: every embed carried a fresh key.")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.embed", description=__doc__)
    parser.add_argument("--requests", type=int, default=300, help="measured rounds (default 300)")
    parser.add_argument("--warmup", type=int, default=20, help="rounds not timed (default 20)")
    args = parser.parse_args(argv)
    if args.requests < 2 or args.warmup < 0:
        parser.error("--requests must be at least 2 and --warmup at least 0")

    return bench_main(lambda workdir: run(args, workdir))


def run(args: argparse.Namespace, workdir: Path) -> int:
    with running_emulator(workdir, "--rate-limit", "0") as emulator:
        database = workdir / "portal.sqlite3"
        environment = portal_environment(database=database, emulator_url=emulator.url)
        user = portal_prepare(environment)
        with running_portal(environment, workdir, workers=WORKERS, threads=THREADS) as portal:
            print(
                f"Emulator at {emulator.url} (no rate limit), portal at {portal.url} "
                f"(gunicorn, {WORKERS} workers x {THREADS} threads, SQLite, DEBUG=False)"
            )
            print(f"{args.requests} rounds after {args.warmup} warm-up rounds, interleaved.")
            with requests.Session() as browser, upstream_session() as upstream:
                portal_log_in(browser, portal.url, user)
                target = Target(emulator, portal, upstream, browser)
                samples = measure(target, rounds=args.requests, warmup=args.warmup)
        audited = embed_mints_audited(database)
        if audited != samples.embeds:
            samples.failures[f"audit trail: {audited} rows for {samples.embeds} embeds"] += 1
    report(samples, audited=audited)
    return 1 if samples.failures else 0


if __name__ == "__main__":
    sys.exit(main())
