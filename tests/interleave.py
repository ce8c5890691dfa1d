"""Races played in a chosen order: threads watched, and held, at one cache operation on one
key, or where they send one signal.

A race between workers happens between two of their cache operations (a look
at a key, then taking a lock). `watch` wraps one operation of the cache
backend the tests run on (local memory or Redis) for one key: it records
every call (which thread, what it answered) and can hold a chosen call, after
the cache has answered, until the test lets it go. The test then does what the
other worker does in between, with the real code, and the race plays out the
same way on any machine, however busy: nothing waits for time to pass.

A race between two requests' transactions happens between one's read of a row and its
write: `held_at` holds a thread where it sends a signal (a model's `pre_save`, a
library's own), and the test commits the other request's work meanwhile.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from django.core.cache import caches
from django.db import connections
from django.dispatch import Signal

# Long enough never to be reached by a test that works; a test that breaks fails, not hangs.
_EVENT_TIMEOUT = 30.0


@dataclass(frozen=True, slots=True)
class Call:
    thread: str  # the calling thread's name
    number: int  # its how-manieth call of the operation on the key (from 1)
    result: Any  # what the cache answered


class Watch:
    """The calls seen so far, and the held ones' release."""

    def __init__(self, hold: Callable[[Call], bool]) -> None:
        self._hold = hold
        self._changed = threading.Condition()
        self._released = threading.Event()
        self.calls: list[Call] = []
        self.held: list[Call] = []

    def wait_for(self, condition: Callable[[list[Call]], bool], what: str) -> None:
        """Wait until `condition(calls)` holds; fail the test saying `what` if it never does."""
        with self._changed:
            assert self._changed.wait_for(lambda: condition(self.calls), _EVENT_TIMEOUT), what

    def wait_held(self, count: int = 1) -> None:
        with self._changed:
            held = self._changed.wait_for(lambda: len(self.held) >= count, _EVENT_TIMEOUT)
            assert held, f"{len(self.held)} call(s) held, not {count}"

    def release(self) -> None:
        """Let the held calls return, and hold no more."""
        self._released.set()

    def _seen(self, thread: str, result: Any) -> None:
        with self._changed:
            number = 1 + sum(1 for call in self.calls if call.thread == thread)
            call = Call(thread, number, result)
            self.calls.append(call)
            hold = not self._released.is_set() and self._hold(call)
            if hold:
                self.held.append(call)
            self._changed.notify_all()
        if hold:
            self._released.wait(_EVENT_TIMEOUT)


@contextmanager
def watch(
    operation: str, key: str, *, hold: Callable[[Call], bool] = lambda call: False
) -> Iterator[Watch]:
    """Record every `operation` (`"get"`, `"add"`, …) on cache `key`, in any thread, and hold
    the calls for which `hold(call)` is true once the cache has answered, until `release()`.

    Held calls are let go when the block ends, whatever happened in it.
    """
    backend = type(caches["default"])
    real = getattr(backend, operation)
    seen = Watch(hold)

    def watched(self: Any, called_key: Any, *args: Any, **kwargs: Any) -> Any:
        result = real(self, called_key, *args, **kwargs)
        if called_key == key:
            seen._seen(threading.current_thread().name, result)
        return result

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(backend, operation, watched)
        try:
            yield seen
        finally:
            seen.release()


class Hold:
    """One thread held at one point, until the test lets it go."""

    def __init__(self) -> None:
        self._reached = threading.Event()
        self._released = threading.Event()

    def wait_held(self) -> None:
        assert self._reached.wait(_EVENT_TIMEOUT), "the thread never reached where it is held"

    def release(self) -> None:
        self._released.set()

    def _arrive(self) -> None:
        if self._reached.is_set() or self._released.is_set():
            return  # held once only
        self._reached.set()
        self._released.wait(_EVENT_TIMEOUT)


@contextmanager
def held_at(signal: Signal, *, thread: str, sender: Any = None) -> Iterator[Hold]:
    """Hold the thread called `thread` the first time it sends `signal` (from `sender`),
    once the receivers connected before have run, until `release()`.

    The held thread is let go when the block ends, whatever happened in it.
    """
    hold = Hold()

    def receiver(**kwargs: Any) -> None:
        if threading.current_thread().name == thread:
            hold._arrive()

    signal.connect(receiver, sender=sender, weak=False)
    try:
        yield hold
    finally:
        hold.release()
        signal.disconnect(receiver, sender=sender)


def start(name: str, work: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    """`work()` in a thread called `name`; a list that gets its result or its failure.
    The thread's database connections are closed when it ends."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(work())
        except BaseException as error:  # collected for the test to assert on
            outcome.append(error)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run, name=name)
    thread.start()
    return thread, outcome
