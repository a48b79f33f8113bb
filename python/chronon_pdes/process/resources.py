"""Shared resources of the process layer: Resource, PriorityResource, Store, FilterStore,
Container. Requests are served first come, first served (by priority, then arrival, for a
PriorityResource); a request that cannot be served yet waits, and so do those behind it
(except in a FilterStore, where each get takes the first item it accepts)."""

from bisect import insort
from collections import deque

from .events import Event

INF = float("inf")


class _Queued(Event):
    """A request, put or get: an event that happens when it is served. As a context manager
    (``with res.request() as req:``) it is cancelled or released when the block ends."""

    __slots__ = ("owner",)

    def __init__(self, owner):
        Event.__init__(self, owner.env)
        self.owner = owner

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.owner._leave(self)
        return False

    def cancel(self):
        """Withdraws a request that has not been served yet."""
        if self.triggered:
            raise RuntimeError(f"{self!r} has already been served: release it instead")
        self.owner._withdraw(self)


class Request(_Queued):
    __slots__ = ("priority", "key", "usage_since")

    def __init__(self, resource, priority=0):
        _Queued.__init__(self, resource)
        self.priority = priority
        self.key = (priority, resource._n)
        self.usage_since = None

    def __repr__(self):
        return f"<Request of {self.owner!r} at {id(self):#x}>"

    def __lt__(self, other):
        return self.key < other.key


class Resource:
    """``capacity`` units, each held by one request at a time (SimPy's ``Resource``)."""

    def __init__(self, env, capacity=1):
        if not (isinstance(capacity, int) and capacity >= 1):
            raise ValueError(f"Resource capacity must be an integer >= 1, not {capacity!r}")
        self.env = env
        self.capacity = capacity
        self.users = []
        self.queue = []
        self._n = 0

    def __repr__(self):
        return f"{type(self).__name__}(capacity={self.capacity})"

    @property
    def count(self):
        """How many units are held."""
        return len(self.users)

    def request(self):
        return self._enqueue(Request(self))

    def _enqueue(self, req):
        self._n += 1
        self.queue.append(req)
        self._serve()
        return req

    def _serve(self):
        queue, users = self.queue, self.users
        while queue and len(users) < self.capacity:
            req = queue.pop(0)
            users.append(req)
            req.usage_since = self.env._now
            req.succeed()

    def release(self, request):
        """Gives back the unit ``request`` holds; returns an event that has happened."""
        if getattr(request, "owner", None) is not self:
            raise ValueError(f"{self!r}.release(request): the request is not one of this resource's")
        if request not in self.users:
            if request in self.queue:
                raise RuntimeError(f"{self!r}.release(request): the request was never granted (cancel it instead)")
            raise RuntimeError(f"{self!r}.release(request): the request holds no unit (released twice?)")
        self.users.remove(request)
        self._serve()
        return Event(self.env).succeed()

    def _withdraw(self, req):
        if req in self.queue:
            self.queue.remove(req)

    def _leave(self, req):
        if req in self.users:
            self.release(req)
        else:
            self._withdraw(req)


class PriorityResource(Resource):
    """A Resource whose queue is ordered by ``priority`` (smaller first), then arrival."""

    def request(self, priority=0):
        req = Request(self, priority)
        self._n += 1
        insort(self.queue, req)
        self._serve()
        return req


class StorePut(_Queued):
    __slots__ = ("item",)

    def __init__(self, store, item):
        _Queued.__init__(self, store)
        self.item = item


class StoreGet(_Queued):
    __slots__ = ("filter",)

    def __init__(self, store, filter=None):
        _Queued.__init__(self, store)
        self.filter = filter


class Store:
    """Items in first-in first-out order, at most ``capacity`` of them (SimPy's ``Store``):
    ``yield store.put(item)``, ``item = yield store.get()``."""

    def __init__(self, env, capacity=INF):
        if not capacity > 0:
            raise ValueError(f"Store capacity must be > 0, not {capacity!r}")
        self.env = env
        self.capacity = capacity
        self.items = []
        self.put_queue = deque()
        self.get_queue = deque()

    def __repr__(self):
        return f"{type(self).__name__}(capacity={self.capacity})"

    def put(self, item):
        ev = StorePut(self, item)
        self.put_queue.append(ev)
        self._settle()
        return ev

    def get(self):
        ev = StoreGet(self)
        self.get_queue.append(ev)
        self._settle()
        return ev

    def _deliver(self, item):
        """An item from another LP (the inbox): it never waits for room."""
        if self.get_queue and not self.items and type(self) is Store:
            self.get_queue.popleft().succeed(item)
            return
        self.items.append(item)
        self._settle()

    def _take(self):
        served = False
        while self.get_queue and self.items:
            self.get_queue.popleft().succeed(self.items.pop(0))
            served = True
        return served

    def _settle(self):
        progress = True
        while progress:
            progress = False
            while self.put_queue and len(self.items) < self.capacity:
                ev = self.put_queue.popleft()
                self.items.append(ev.item)
                ev.succeed()
                progress = True
            progress = self._take() or progress

    def _withdraw(self, ev):
        for q in (self.put_queue, self.get_queue):
            if ev in q:
                q.remove(ev)

    _leave = _withdraw


class FilterStore(Store):
    """A Store whose ``get(filter)`` takes the first item for which ``filter(item)`` is true."""

    def get(self, filter=lambda item: True):
        ev = StoreGet(self, filter)
        self.get_queue.append(ev)
        self._settle()
        return ev

    def _take(self):
        served = False
        for ev in list(self.get_queue):
            for i, item in enumerate(self.items):
                if ev.filter(item):
                    self.get_queue.remove(ev)
                    ev.succeed(self.items.pop(i))
                    served = True
                    break
        return served


class ContainerEvent(_Queued):
    __slots__ = ("amount",)

    def __init__(self, container, amount):
        if not amount > 0:
            raise ValueError(f"{container!r}: an amount must be > 0, not {amount!r}")
        if amount > container.capacity:
            raise ValueError(f"{container!r}: an amount of {amount} exceeds the capacity")
        _Queued.__init__(self, container)
        self.amount = amount


class Container:
    """A level of continuous or discrete matter between 0 and ``capacity`` (SimPy's
    ``Container``): ``yield tank.put(amount)``, ``yield tank.get(amount)``."""

    def __init__(self, env, capacity=INF, init=0):
        if not capacity > 0:
            raise ValueError(f"Container capacity must be > 0, not {capacity!r}")
        if not 0 <= init <= capacity:
            raise ValueError(f"Container init must be between 0 and the capacity {capacity}, not {init!r}")
        self.env = env
        self.capacity = capacity
        self.level = init
        self.put_queue = deque()
        self.get_queue = deque()

    def __repr__(self):
        return f"Container(capacity={self.capacity}, level={self.level})"

    def put(self, amount):
        ev = ContainerEvent(self, amount)
        self.put_queue.append(ev)
        self._settle()
        return ev

    def get(self, amount):
        ev = ContainerEvent(self, amount)
        self.get_queue.append(ev)
        self._settle()
        return ev

    def _settle(self):
        progress = True
        while progress:
            progress = False
            while self.put_queue and self.level + self.put_queue[0].amount <= self.capacity:
                ev = self.put_queue.popleft()
                self.level += ev.amount
                ev.succeed()
                progress = True
            while self.get_queue and self.get_queue[0].amount <= self.level:
                ev = self.get_queue.popleft()
                self.level -= ev.amount
                ev.succeed()
                progress = True

    def _withdraw(self, ev):
        for q in (self.put_queue, self.get_queue):
            if ev in q:
                q.remove(ev)

    _leave = _withdraw
