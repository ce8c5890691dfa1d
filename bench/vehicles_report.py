"""The vehicles benchmark's tables: one per fleet size (warm under load and alone, cold
against the bare `list-cars` call), the memory of one worker, and the targets set for the
vehicle list with where each landed (`met` or `MISSED`).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from bench.stats import percentile
from bench.vehicles_memory import MEMORY_SIZE, Memory
from bench.vehicles_rounds import PAGE, SizeResult

WARM_TARGET = 0.5  # of the bare view's requests/s
SEARCH_TARGET_MS = 10.0  # server time at p50, over 50,000 vehicles
COLD_TARGET = 1.3  # times the bare list-cars round trip
MEMORY_TARGET_MB = 50.0


def _median(values: Sequence[float]) -> str:
    return f"{statistics.median(values):.2f}" if values else "-"


def _p99(values: Sequence[float]) -> str:
    return f"{percentile(values, 0.99):.2f}" if values else "-"


def _mb(value: float) -> str:
    return f"{value / 1e6:.1f} MB"


def _bytes(value: float) -> str:
    return _mb(value) if value >= 1e6 else f"{value / 1e3:.0f} kB"


def report_size(result: SizeResult) -> None:
    found = ", ".join(
        f'"{probe.path.partition("q=")[2]}" matches {result.matches.get(probe.path, 0):,}'
        for probe in result.searches
    )
    stored = f"; {_bytes(result.stored_bytes)} in Redis" if result.stored_bytes else ""
    print(
        f"\nFleet of {result.size:,} vehicles: {found}; list-cars answer "
        f"{_bytes(result.answer_bytes)}{stored}; list-cars calls: "
        f"{result.warmup_calls} while warming up, {result.warm_calls} while warm"
    )
    print(
        f"{'':30}{'client, under load':^32}  {'server time ms (%D)':^28}\n"
        f"{'warm':30}{'req/s':>8}{'x bare':>8}{'p50 ms':>8}{'p99 ms':>8}  "
        f"{'load p50':>9}{'p99':>7}{'alone p50':>10}{'p99':>7}"
    )
    for probe in result.probes:
        loads = result.loads.get(probe.path, [])
        p50 = statistics.median(load.p50_ms for load in loads) if loads else 0.0
        p99 = max((load.p99_ms for load in loads), default=0.0)
        print(
            f"{probe.label:30}{result.requests_per_second(probe):>8.0f}"
            f"{result.ratio(probe):>8.2f}{p50:>8.2f}{p99:>8.2f}  "
            f"{_median(result.loaded.get(probe.path, [])):>9}"
            f"{_p99(result.loaded.get(probe.path, [])):>7}"
            f"{_median(result.alone.get(probe.path, [])):>10}"
            f"{_p99(result.alone.get(probe.path, [])):>7}"
        )
    if not (result.cold_page and result.upstream_parsed):
        print("cold: no successful round")
        return
    cold, upstream = statistics.median(result.cold_page), statistics.median(result.upstream_parsed)
    warm = statistics.median(result.alone[PAGE.path])
    print(f"{'cold, medians of ' + str(len(result.cold_page)) + ' rounds':30}{'ms':>8}")
    print(
        f"{'  GET /vehicles/ (cold page)':30}{cold:>8.2f}   server "
        f"{_median(result.cold_server)} ms: fetch, store, sort, render"
    )
    print(f"{'  list-cars + response.json()':30}{upstream:>8.2f}   the baseline")
    print(f"{'  list-cars, bytes only':30}{_median(result.upstream_bytes):>8}")
    print(
        f"{'  list-cars, bytes in one read':30}{_median(result.upstream_one_read):>8}"
        "   as the portal reads them"
    )
    if result.upstream_orjson:
        print(
            f"{'  list-cars + orjson.loads':30}{_median(result.upstream_orjson):>8}"
            "   for comparison"
        )
    print(
        f"{'  cold page / baseline':30}{result.cold_ratio():>8.2f}x  the page adds "
        f"{cold - upstream:.1f} ms; the warm page alone takes {warm:.1f} ms of server time"
    )
    floor = result.cold_floor()
    print(
        f"{'  floor of any cold page':30}{floor:>8.2f}   = {floor / upstream:.2f}x: list-cars "
        f"bytes + the warm page's server time + the HTTP hop ({result.cold_hop():.2f} ms)"
    )
    if result.cold_bare:
        bare = statistics.median(result.cold_bare)
        print(
            f"{'  bare view, one at a time':30}{bare:>8.2f}   = {bare / upstream:.2f}x: a page "
            "that only checks the session, over the same connection, right after the cold page"
        )


def report_memory(memory: Memory) -> None:
    traced, fetching, decoding = memory.traced, memory.fetching, memory.decoding
    print(f"\nMemory of one worker, fleet of {traced['count']:,}")
    print(
        f"  a worker that decodes the stored list (tracemalloc, after gc): "
        f"{_mb(traced['decoded'])} for the first page, {_mb(traced['decoded_all'])} once "
        f"every sort order and search was used; peak {_mb(traced['decode_peak'])} while decoding"
    )
    if decoding is not None:
        print(
            f"    RSS of such a worker (own process, list decoded from Redis): "
            f"+{_mb(decoding['first_page'])} for the first page, +{_mb(decoding['all'])} "
            f"with everything used, peak +{_mb(decoding['peak'])}"
        )
    print(
        f"  the worker that fetched it (tracemalloc): {_mb(traced['fetched'])} kept, of which "
        f"{_mb(traced['in_cache'])} is the stored copy in its local-memory cache (Redis holds "
        f"it in production); peak {_mb(traced['fetch_peak'])} while fetching and parsing"
    )
    print(
        f"    RSS of such a worker (own process): +{_mb(fetching['first_page'])} for the "
        f"first page, +{_mb(fetching['all'])} with everything used, peak +{_mb(fetching['peak'])}"
    )


def _verdict(met: bool) -> str:
    return "met" if met else "MISSED"


def report_targets(results: Sequence[SizeResult], memory: Memory) -> None:
    print("\nTargets: landed at")
    for result in results:
        ratios = ", ".join(
            f"{probe.label.removeprefix('/vehicles/')} {result.ratio(probe):.2f}x"
            for probe in result.probes[1:]
        )
        worst = min(result.ratio(probe) for probe in result.probes[1:])
        print(
            f"  warm page >= {WARM_TARGET}x bare view, {result.size:>6,}: {ratios}"
            f"  -> {_verdict(worst >= WARM_TARGET)}"
        )
    for result in results:
        if result.size != MEMORY_SIZE:
            continue
        for probe in result.searches:
            alone = statistics.median(result.alone[probe.path])
            loaded = statistics.median(result.loaded[probe.path])
            print(
                f"  search over {result.size:,} < {SEARCH_TARGET_MS:.0f} ms server p50, "
                f"{probe.label}: {alone:.1f} ms one at a time -> "
                f"{_verdict(alone < SEARCH_TARGET_MS)}; {loaded:.1f} ms under load "
                f"-> {_verdict(loaded < SEARCH_TARGET_MS)}"
            )
    for result in results:
        if result.cold_page and result.upstream_parsed:
            ratio = result.cold_ratio()
            floor = result.cold_floor() / statistics.median(result.upstream_parsed)
            print(
                f"  cold page <= {COLD_TARGET}x list-cars+json, {result.size:>6,}: "
                f"{ratio:.2f}x -> {_verdict(ratio <= COLD_TARGET)} (floor {floor:.2f}x)"
            )
    kept = [("decoded, tracemalloc", memory.traced["decoded_all"])]
    if memory.decoding is not None:
        kept.append(("decoding worker RSS", memory.decoding["all"]))
    kept.append(("fetching worker RSS", memory.fetching["all"]))
    for label, size in kept:
        print(
            f"  memory per worker < {MEMORY_TARGET_MB:.0f} MB, {memory.traced['count']:,}, "
            f"{label}: {_mb(size)} -> {_verdict(size / 1e6 < MEMORY_TARGET_MB)}"
        )
