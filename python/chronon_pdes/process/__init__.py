"""SimPy's building blocks on chronon's LPs.

Each LP of a :class:`ProcessModel` is a small SimPy world: an :class:`Environment` (``env``)
with its clock, processes written as generators (``yield env.timeout(d)``, waiting for events,
``yield env.process(...)``, return values, interrupts), :class:`Event`, :class:`Resource`,
:class:`PriorityResource`, :class:`Store`, :class:`FilterStore`, :class:`Container`,
:class:`AnyOf` / :class:`AllOf` (``|``, ``&``). LPs talk by messages: ``env.send(dst, delay,
msg)`` (``delay`` at least the model's lookahead) arrives in LP ``dst``'s inbox, read with
``msg = yield env.receive()``. Randomness comes from ``env.rng``, the LP's stream. See
docs/simpy.md.

**Order within an instant.** An LP keeps its own event queue, ordered by time, then urgency
(a process's start and an interrupt before the rest), then the order events were scheduled,
as in SimPy. For every future time in that queue the LP sends itself one engine event (a
"wake"); the engine delivers it and the LP then processes every local event due. Messages from
other LPs enter the inbox when the engine delivers them; a message and the LP's own events at
the same instant are ordered by the engine, the same way under every executor.

**Rollback.** Generators cannot be copied or pickled, so Time Warp cannot save an LP's state
by copying it. A ProcessModel has ``reverse`` instead (Time Warp then saves no copies): an LP's
chronon state (:class:`LPState`) is the log of the engine events it handled, each with its
time and the position of its first random draw, and the list of the draws. The live
environment, with its generators, is a cache beside the log. ``reverse`` pops the newest log
entry and its draws and drops the cache; the next event (or ``finish``) rebuilds the cache by
running ``setup`` and every logged event again, with sends and counts left out and the random
draws read back from the log (the engine restores the LP's own stream on a rollback). Pickles
(checkpoints, a worker process's copy) and ``==`` (``--check-reverse``) see the log only.

The cost: a rebuild replays the LP's whole history, so one rollback costs as much as the
events the LP handled so far (docs/simpy.md measures it), and the log grows with the run. Time
Warp suits process models with few rollbacks or short runs; the other executors never rebuild.
"""

from .env import Environment, LPState, ProcessModel, Stream
from .events import AllOf, AnyOf, Condition, Event, Interrupt, Process, Timeout
from .resources import Container, FilterStore, PriorityResource, Request, Resource, Store

__all__ = ["ProcessModel", "Environment", "LPState", "Stream", "Event", "Timeout", "Process",
           "Interrupt", "Condition", "AllOf", "AnyOf", "Resource", "PriorityResource", "Request",
           "Store", "FilterStore", "Container"]
