"""`python -m emulator`: serve the Fleet API emulator (see README.md).

The bare command serves; `serve` says the same explicitly; `send-webhooks`
sends made-up webhook events to a URL (the portal's receiver).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from collections.abc import Sequence

from emulator import auth, handovers, webhook_sender, webhooks
from emulator.cnh import DEFAULT_TIMEOUT_WAIT, NO_LICENCE_CPF, SUSPENDED_CPF, TIMEOUT_CPF
from emulator.fleet import MAX_VEHICLES, generate_vehicles
from emulator.minimal import random_spelling_seed
from emulator.server import FleetServer
from emulator.state import Emulator, Settings
from emulator.webapp import PASSWORD, USERS


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m emulator",
        description="A stand-in for the Fleet Management API and its web application.",
        epilog=(
            f"CNH test CPFs: {_formatted(TIMEOUT_CPF)} times out (504 with Retry-After"
            f" individually, status: error in a batch); {_formatted(NO_LICENCE_CPF)} has no"
            f" licence; {_formatted(SUSPENDED_CPF)}'s licence is suspended. See emulator/README.md."
        ),
    )
    _add_serve_arguments(parser, defaults=True)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve = commands.add_parser("serve", help="serve the API (what the bare command does)")
    # Suppressed defaults, so `--port 1 serve` keeps the port given before it.
    _add_serve_arguments(serve, defaults=False)
    send = commands.add_parser(
        "send-webhooks",
        help="send made-up fine and notification webhooks to a URL",
        description="Send COUNT webhook deliveries (fines and notifications, new ones and "
        "updates) to URL, as the fleet platform would, and print what was answered. "
        "The same seed sends the same deliveries.",
    )
    _add_send_arguments(send)
    return parser


def _add_send_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", required=True, help="the receiver, e.g. the portal's webhook URL")
    parser.add_argument(
        "--count",
        type=_count,
        default=10,
        help=f"deliveries to send, 1 to {webhooks.MAX_COUNT}, duplicates and malformed included",
    )
    parser.add_argument("--seed", type=int, default=1, help="seed of the made-up events")
    parser.add_argument(
        "--vehicles",
        type=_vehicle_count,
        default=0,
        help="about the vehicles of the emulator serving this many (make run's: 500), "
        "with --fleet-seed its --seed; 0 (the default): made-up plates",
    )
    parser.add_argument(
        "--fleet-seed", type=int, default=1, help="the --seed of that emulator (default 1)"
    )
    parser.add_argument(
        "--handovers",
        action="store_true",
        help="that emulator's vehicles change hands (its --handovers): about a third of the "
        "fines about a vehicle fall within 3 hours of one of its hand-overs; needs --vehicles",
    )
    parser.add_argument(
        "--within-hours",
        type=_positive_float,
        default=None,
        help="spread the records over this many hours before now (default: the year before)",
    )
    parser.add_argument(
        "--duplicates", type=_share, default=0.0, help="share of exact duplicates, e.g. 0.2"
    )
    parser.add_argument(
        "--malformed", type=_share, default=0.0, help="share of malformed bodies, e.g. 0.05"
    )
    parser.add_argument("--shuffle", action="store_true", help="send in a random order")
    parser.add_argument(
        "--extra-keys", action="store_true", help="add keys a receiver cannot know yet"
    )
    parser.add_argument(
        "--concurrency", type=_positive_int, default=4, help="deliveries in flight at once"
    )
    parser.add_argument(
        "--timeout", type=_positive_float, default=10.0, help="seconds to wait for each answer"
    )
    parser.add_argument(
        "--manifest",
        help="write what was sent and the final state of each record to this JSON file",
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")


def send_webhooks(args: argparse.Namespace) -> int:
    if args.handovers and not args.vehicles:
        print("send-webhooks: --handovers needs --vehicles N", file=sys.stderr)
        return 2
    vehicles = generate_vehicles(args.vehicles, args.fleet_seed)
    schedule = None
    if args.handovers:
        schedule = handovers.Schedule(args.fleet_seed, [v.driver_id for v in vehicles])
    try:
        batch = webhooks.generate(
            args.count,
            seed=args.seed,
            duplicates=args.duplicates,
            malformed=args.malformed,
            shuffle=args.shuffle,
            extra_keys=args.extra_keys,
            plates=[vehicle.car_plate for vehicle in vehicles],
            within=None if args.within_hours is None else args.within_hours * 3600,
            schedule=schedule,
        )
        report = webhook_sender.send(
            args.url,
            [delivery.body for delivery in batch.deliveries],
            concurrency=args.concurrency,
            timeout=args.timeout,
        )
    except ValueError as error:
        print(f"send-webhooks: {error}", file=sys.stderr)
        return 2
    if args.manifest:
        with open(args.manifest, "w", encoding="utf-8") as manifest:
            json.dump(batch.manifest() | {"report": report.as_json()}, manifest)
    counts = batch.counts()
    if args.json:
        print(json.dumps(counts | report.as_json()))
    else:
        answers = ", ".join(f"{status} x {n}" for status, n in sorted(report.statuses.items()))
        rate = counts["deliveries"] / report.seconds if report.seconds else 0.0
        print(
            f"Sent {counts['deliveries']} deliveries to {webhook_sender.where(args.url)} in "
            f"{report.seconds:.1f} s ({rate:.0f}/s): {counts['events']} events of "
            f"{counts['records']} records, {counts['duplicates']} duplicates, "
            f"{counts['malformed']} malformed. Answers: {answers or 'none'}; "
            f"{report.errors} unanswered; {report.retries} retries."
        )
    for sample in report.error_samples:
        print(f"  error: {sample}", file=sys.stderr)
    failed = report.errors or any(status >= 500 for status in report.statuses)
    return 1 if failed else 0


def _add_serve_arguments(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    def default(value: object) -> object:
        return value if defaults else argparse.SUPPRESS

    parser.add_argument("--host", default=default("127.0.0.1"), help="address to listen on")
    parser.add_argument(
        "--port", type=int, default=default(8001), help="port to listen on; 0 picks a free one"
    )
    parser.add_argument(
        "--vehicles",
        type=_vehicle_count,
        default=default(200),
        help=f"size of the fleet, 0 to {MAX_VEHICLES}",
    )
    parser.add_argument("--seed", type=int, default=default(1), help="seed of the fictitious data")
    parser.add_argument(
        "--rate-limit",
        type=_non_negative_int,
        default=default(600),
        help="calls per window and access token; 0 turns limiting off",
    )
    parser.add_argument(
        "--rate-window",
        type=_positive_float,
        default=default(60.0),
        help="rate-limit window, in seconds",
    )
    parser.add_argument(
        "--cnh-timeout-wait",
        type=_non_negative_float,
        default=default(DEFAULT_TIMEOUT_WAIT),
        help=(
            f"seconds the CNH lookup of the timeout test CPF {_formatted(TIMEOUT_CPF)} waits"
            " before its 504 (default 60, the spec's limit)"
        ),
    )
    parser.add_argument(
        "--minimal",
        action="store_true",
        default=default(False),
        help="answer only what the spec promises, with members spelled as --spelling-seed says"
        " and unknown members added (see emulator/README.md)",
    )
    parser.add_argument(
        "--spelling-seed",
        type=int,
        default=default(None),
        help="seed of the minimal mode's spellings and added members"
        " (default: a random one, printed at start-up)",
    )
    parser.add_argument(
        "--handovers",
        action="store_true",
        default=default(False),
        help="vehicles change hands as the emulator's clock moves (see emulator/README.md)",
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        default=default(False),
        help="log every request to stderr",
    )


def serve(args: argparse.Namespace) -> int:
    emulator = Emulator(
        Settings(
            vehicles=args.vehicles,
            seed=args.seed,
            rate_limit=args.rate_limit,
            rate_window=args.rate_window,
            cnh_timeout_wait=args.cnh_timeout_wait,
            minimal=args.minimal,
            spelling_seed=(
                random_spelling_seed() if args.spelling_seed is None else args.spelling_seed
            ),
            handovers=args.handovers,
        )
    )
    try:
        server = FleetServer((args.host, args.port), emulator, verbose=args.verbose)
    except OSError as error:
        print(f"cannot listen on {args.host}:{args.port}: {error}", file=sys.stderr)
        return 1
    # Handlers first: a caller may signal as soon as it has read the URL.
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    # Scripts and tests read the first line for the URL: keep it first and exact.
    print(
        f"Fleet API emulator listening on {server.url}\n{_banner(server.url, emulator)}", flush=True
    )
    # The server runs on a thread so that the main thread, which receives the
    # signals, can call shutdown(): from inside serve_forever it would deadlock.
    thread = threading.Thread(target=server.serve_forever, name="emulator-server", daemon=True)
    thread.start()
    stop.wait()
    server.shutdown()
    server.server_close()
    return 0


def _banner(url: str, emulator: Emulator) -> str:
    settings = emulator.settings
    pairs = [
        (auth.DEMO, "demo company"),
        (auth.OTHER_ENVIRONMENT, "other environment: rejected"),
        (auth.NO_PERMISSION, "no permission for the company: fbk_002"),
        (auth.BASE64_LOOKING, "a secret key that looks base64: valid"),
    ]
    lines = [
        f"  FLEET_BASE_URL={url}",
        f"  FLEET_LOGIN_URL={url}/app",
        "  Credentials (ACCESS_TOKEN / SECRET_KEY):",
        *(f"    {c.access_token} / {c.secret_key}  ({role})" for c, role in pairs),
        f"  Web-app users: {', '.join(USERS)} (password {PASSWORD})",
        f"  Fleet: {settings.vehicles} vehicles, seed {settings.seed}."
        f" Rate limit: {settings.rate_limit or 'off'} per {settings.rate_window:g} s.",
        f"  CNH test CPFs: {_formatted(TIMEOUT_CPF)} times out"
        f" (after {settings.cnh_timeout_wait:g} s), {_formatted(NO_LICENCE_CPF)} has no licence,"
        f" {_formatted(SUSPENDED_CPF)}'s licence is suspended.",
        f"  Minimal mode: on, spelling seed {settings.spelling_seed}"
        if settings.minimal
        else "  Minimal mode: off",
        "  Hand-overs: on (vehicles change hands as the clock moves)"
        if settings.handovers
        else "  Hand-overs: off",
        f"  Control surface: {url}/_emulator/ (see emulator/README.md)",
    ]
    return "\n".join(lines)


def _formatted(cpf: str) -> str:
    return f"{cpf[:3]}.{cpf[3:6]}.{cpf[6:9]}-{cpf[9:]}"


def _vehicle_count(text: str) -> int:
    value = int(text)
    if not 0 <= value <= MAX_VEHICLES:
        raise argparse.ArgumentTypeError(f"must be from 0 to {MAX_VEHICLES}")
    return value


def _count(text: str) -> int:
    value = int(text)
    if not 1 <= value <= webhooks.MAX_COUNT:
        raise argparse.ArgumentTypeError(f"must be from 1 to {webhooks.MAX_COUNT}")
    return value


def _share(text: str) -> float:
    value = float(text)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError("must be from 0 to less than 1")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def _non_negative_float(text: str) -> float:
    value = float(text)
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be more than 0")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command in (None, "serve"):
        return serve(args)
    if args.command == "send-webhooks":
        return send_webhooks(args)
    raise AssertionError(f"unhandled command {args.command}")  # argparse rejects unknown ones


if __name__ == "__main__":
    sys.exit(main())
