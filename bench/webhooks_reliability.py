"""The webhook receiver loses nothing and applies everything once.

`python -m bench.webhooks_reliability [--count 10000] [--duplicates 0.2] [--malformed 0.05]`
starts the portal under gunicorn (2 workers x 4 threads, its own SQLite
database, or `--database-url` for a PostgreSQL on this machine) with its
background worker (`manage.py db_worker`, which processes what the receiver
stored), and has the emulator send `--count` deliveries to its receiver with
`send-webhooks`: that share of exact duplicates, of malformed bodies, extra
keys, all shuffled, 8 at a time. Once the worker has processed every stored
delivery, it reads the portal's database and checks:

- every delivery sent is stored, byte for byte (by SHA-256), and nothing else;
- every record the emulator made is present exactly once, in its final state
  (`treated`, `linkFrame`), under its id (or without one when it had none);
- every malformed body is kept as `invalid`, for replay; no delivery is left
  `received` or `failed`;
- `manage.py replay_webhooks` then leaves every record as it was.

It prints the counts (lost: sent and not stored) and exits 1 when any of this
fails (2 when a server could not start). The check knows the receiver only as
the sender does (HTTP answers) and reads what it left through the models
(`WebhookDelivery`, `Fine`, `Notification`) and `manage.py replay_webhooks`,
never the receiver's own code, which may change under it.
tests/webhooks/test_reliability.py runs the same check, smaller, against
Django's live server.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench.portal_setup import (
    add_database_argument,
    portal_empty_webhook_tables,
    portal_environment,
    portal_migrate,
)
from bench.servers import (
    ROOT,
    ServerFailed,
    bench_main,
    portal_call,
    portal_wait_processed,
    running_emulator,
    running_portal,
    running_worker,
)

TOKEN = "bench-webhook-token"
WORKERS, THREADS = 2, 4


# --- The check (also used by tests/webhooks/test_reliability.py) ---------------


def portal_state() -> dict[str, Any]:
    """What the portal's database holds, as JSON-able data (in a configured Django process)."""
    from fleet.models import Fine, Notification, WebhookDelivery

    deliveries = list(WebhookDelivery.objects.values_list("status", "body_sha256"))
    records = []
    for model, kind, reference in (
        (Fine, "frame", "autoInfracao"),
        (Notification, "notification", "createdAt"),
    ):
        for record in model.objects.all():
            records.append(
                {
                    "kind": kind,
                    "id": record.external_id or None,
                    "reference": record.payload.get(reference),
                    "treated": record.treated,
                    "linkFrame": getattr(record, "link_frame", "") or None,
                }
            )
    return {"deliveries": deliveries, "records": records}


@dataclass(slots=True)
class Verdict:
    counts: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def check(manifest: dict[str, Any], state: dict[str, Any]) -> Verdict:
    """Compare what the emulator sent (`--manifest`) with what the portal holds."""
    verdict = Verdict()
    sent = Counter(manifest["bodies_sha256"])
    stored = Counter(sha for _, sha in state["deliveries"])
    statuses = Counter(status for status, _ in state["deliveries"])
    report = manifest.get("report", {})
    answers = Counter({int(status): n for status, n in report.get("statuses", {}).items()})
    verdict.counts = {
        "sent": sent.total(),
        "answered 2xx": sum(n for status, n in answers.items() if 200 <= status < 300),
        "retried by the sender": report.get("retries", 0),
        "stored": stored.total(),
        "lost (sent, not stored)": (sent - stored).total(),
        **{f"stored as {status}": n for status, n in sorted(statuses.items())},
        "records expected": len(manifest["records"]),
        "records present": len(state["records"]),
    }
    problems = verdict.problems
    if not_stored := sent - stored:
        problems.append(f"{not_stored.total()} deliveries sent were not stored")
    if unexpected := stored - sent:
        # A retry after an answer that was lost stores the same body twice: say so apart.
        problems.append(f"{unexpected.total()} stored deliveries were not sent (or sent twice)")
    if report.get("errors"):
        problems.append(f"{report['errors']} deliveries got no answer")
    if refused := {status: n for status, n in answers.items() if not 200 <= status < 300}:
        problems.append(f"answers that are not 2xx: {refused}")
    for status in ("received", "failed", "refused", "unknown_kind"):
        if statuses[status]:
            problems.append(f"{statuses[status]} deliveries are {status}")
    kept = Counter(sha for status, sha in state["deliveries"] if status == "invalid")
    # Malformed bodies and their duplicates: each copy is kept.
    bad = set(manifest["malformed_sha256"])
    malformed = Counter(sha for sha in manifest["bodies_sha256"] if sha in bad)
    verdict.counts["malformed sent (duplicates included)"] = malformed.total()
    verdict.counts["malformed kept for replay"] = (malformed & kept).total()
    if missing := malformed - kept:
        problems.append(f"{missing.total()} malformed deliveries are not kept as invalid")
    if extra := kept - malformed:
        problems.append(f"{extra.total()} valid deliveries were stored as invalid")
    problems += _records_problems(manifest["records"], state["records"])
    return verdict


def _records_problems(
    expected: Sequence[dict[str, Any]], present: Sequence[dict[str, Any]]
) -> list[str]:
    problems = []
    found = Counter((r["kind"], r["reference"]) for r in present)
    if twice := [key for key, n in found.items() if n > 1]:
        problems.append(f"{len(twice)} records are present more than once, e.g. {twice[0]}")
    by_key = {(r["kind"], r["reference"]): r for r in present}
    wrong: list[str] = []
    missing = 0
    for record in expected:
        held = by_key.pop((record["kind"], record["reference"]), None)
        if held is None:
            missing += 1
            continue
        want = (record["id"], record["treated"], record["linkFrame"])
        have = (held["id"], held["treated"], held["linkFrame"])
        if want != have:
            wrong.append(f"{record['kind']} {record['reference']}: {have} instead of {want}")
    if missing:
        problems.append(f"{missing} records are missing")
    if by_key:
        problems.append(f"{len(by_key)} records were made that the emulator never sent")
    if wrong:
        problems.append(f"{len(wrong)} records are not in their final state, e.g. {wrong[0]}")
    return problems


def print_verdict(verdict: Verdict) -> None:
    width = max(map(len, verdict.counts))
    for name, value in verdict.counts.items():
        print(f"  {name:<{width}}  {value:>7,}")
    if verdict.problems:
        print("FAILED:")
        for problem in verdict.problems:
            print(f"  - {problem}")
    else:
        print("Every invariant holds.")


# --- The run ---------------------------------------------------------------------


def _state(environment: dict[str, str]) -> dict[str, Any]:
    state: dict[str, Any] = portal_call(environment, "bench.webhooks_reliability:portal_state")
    return state


def run(args: argparse.Namespace, workdir: Path) -> int:
    with running_emulator(workdir) as emulator:
        environment = portal_environment(
            database=workdir / "portal.sqlite3", emulator_url=emulator.url
        ) | {"FLEET_WEBHOOK_TOKENS": TOKEN}
        database = "SQLite (a temporary file)"
        if args.database_url:
            environment["DATABASE_URL"] = args.database_url
            database = (
                f"{urlsplit(args.database_url).scheme} at {urlsplit(args.database_url).hostname}"
            )
        portal_migrate(environment)
        if args.database_url:
            portal_empty_webhook_tables(environment)
        with (
            running_portal(environment, workdir, workers=WORKERS, threads=THREADS) as portal,
            running_worker(environment, workdir) as worker,
        ):
            served = f"gunicorn {WORKERS} workers x {THREADS} threads"
            print(f"Portal at {portal.url}: {served}, {database}.")
            manifest_file = workdir / "manifest.json"
            command = [
                sys.executable, "-m", "emulator", "send-webhooks",
                "--url", f"{portal.url}/webhooks/fleet/{TOKEN}/",
                "--count", str(args.count), "--seed", str(args.seed),
                "--duplicates", str(args.duplicates), "--malformed", str(args.malformed),
                "--shuffle", "--extra-keys", "--concurrency", str(args.concurrency),
                "--manifest", str(manifest_file),
            ]  # fmt: skip
            shown = [part.replace(TOKEN, "[token]") for part in command[3:]]
            print(f"Sending: python -m emulator {' '.join(shown)}")
            started = time.monotonic()
            sender = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
            elapsed = time.monotonic() - started
            print(sender.stdout.strip() or sender.stderr.strip())
            if not manifest_file.exists():
                raise ServerFailed(
                    f"send-webhooks failed (exit {sender.returncode}):\n{sender.stderr}"
                )
            print(f"  ({elapsed:.1f} s with the sender's start-up)")
            waited = portal_wait_processed(environment, worker, timeout=600)
            print(f"  the worker processed the last of them {waited:.1f} s after the sender ended")
        manifest = json.loads(manifest_file.read_text())
        state = _state(environment)
        verdict = check(manifest, state)
        print("\nAfter sending:")
        print_verdict(verdict)

        replay = subprocess.run(
            [sys.executable, "manage.py", "replay_webhooks", "--older-than", "0"],
            cwd=ROOT,
            env=environment,
            capture_output=True,
            text=True,
            check=False,
        )
        # Its log lines (one warning per delivery still kept) go to stderr: the summary is enough.
        summary = (replay.stdout + replay.stderr.rpartition("CommandError: ")[2]).strip()
        print(f"\nmanage.py replay_webhooks --older-than 0 (exit {replay.returncode}):")
        print(f"  {summary}")
        again = _state(environment)
        after_replay = check(manifest, again)
        if sorted(map(json.dumps, again["records"])) != sorted(map(json.dumps, state["records"])):
            after_replay.problems.append("the replay changed records")
        if after_replay.problems:
            print("After the replay:")
            print_verdict(after_replay)
        else:
            print("  every record as it was; the malformed deliveries are still kept.")
    return 1 if verdict.problems or after_replay.problems else 0


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.webhooks_reliability",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--count", type=int, default=10_000, help="deliveries (default 10000)")
    parser.add_argument("--duplicates", type=float, default=0.2, help="share (default 0.2)")
    parser.add_argument("--malformed", type=float, default=0.05, help="share (default 0.05)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=8, help="in flight (default 8)")
    add_database_argument(parser)
    args = parser.parse_args(argv)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_arguments(argv)
    return bench_main(lambda workdir: run(args, workdir))


if __name__ == "__main__":
    sys.exit(main())
