"""Who may wait for an evaluation slot, and a fair place in line for those turned away.

`jobs` evaluations run at once and `max_queue` more may wait. A request beyond that gets 503
with a ticket (header `Cudal1-Ticket`) and a `Retry-After`. Seats that free up go to ticket
holders first, oldest ticket first; a request without a ticket only gets a seat nobody holds a
ticket for. Without tickets, a client told to come back lost every freed seat to clients that
were being answered and sent their next request at once: in a 300-request soak with 32
clients and 18 places, the 14 clients turned away at the start were still turned away 30
minutes later. A ticket not presented again within its `Retry-After` plus `grace_s` lapses
(its client is gone), so dead tickets hold no seat for long.

`Retry-After` is when the ticket's seat should be free: a seat frees each time an evaluation
ends, `jobs` at a time, so the ticket of rank r waits about (r + 1) * mean / jobs.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

FIRST_GUESS_S = 10.0
"""Evaluation time assumed until one has been measured."""


class Admission:
    """Counters and tickets; single-threaded (the event loop), so no lock."""

    def __init__(
        self,
        jobs: int,
        max_queue: int,
        *,
        grace_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.jobs, self.max_queue, self.grace_s, self.clock = jobs, max_queue, grace_s, clock
        self.running = self.waiting = 0
        self.mean_s = FIRST_GUESS_S
        self.tickets: dict[int, float] = {}
        """Ticket -> when it lapses; insertion order is age order."""
        self.issued = 0

    def admit(self, ticket: int | None = None) -> tuple[int, int] | None:
        """None: take a place (the caller counts itself `waiting` before it yields the loop).
        Otherwise the 503's (ticket, Retry-After seconds); the same ticket comes back while
        it is valid, so a client keeps its place."""
        now = self.clock()
        self.outstanding()
        free = self.jobs + self.max_queue - self.running - self.waiting
        held = list(self.tickets)
        if ticket in self.tickets:
            rank = held.index(ticket)
            if rank < free:
                del self.tickets[ticket]
                return None
        elif free > len(held):
            return None
        else:
            ticket, rank = self.issued, len(held)
            self.issued += 1
        wait = max(1, min(600, math.ceil((rank + 1) * self.mean_s / self.jobs)))
        self.tickets[ticket] = now + wait + self.grace_s
        return ticket, wait

    def outstanding(self) -> int:
        """Tickets still valid (lapsed ones dropped)."""
        now = self.clock()
        self.tickets = {t: lapse for t, lapse in self.tickets.items() if lapse > now}
        return len(self.tickets)

    def record(self, evaluation_s: float) -> None:
        """An evaluation's wall time, for the estimate (recent ones weigh most)."""
        self.mean_s = 0.8 * self.mean_s + 0.2 * evaluation_s
