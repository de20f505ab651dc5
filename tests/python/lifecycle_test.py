"""qccl's Python API used from several threads at once (docs/pytorch.md,
"One context, several threads"): shutdown, closing or deleting a hook state, a collective and a
Compressor call, each pair at once, never crash the process; the operation
in flight completes or fails with a qccl error that names the cause, and
every later one fails at once. qccl.init() with other settings says so.

    lifecycle_test.py SCENARIO...

runs the scenarios in order in this process, alone or under mpirun; the
shutdown_* ones end qccl, so each comes last. The threads meet at barriers
and events; a shutdown lands half-way through a call that was timed first,
and the hook's race repeats six times, each scenario within a few seconds. On the first failure it prints it and exits 1."""

import gc
import os
import sys
import threading
import time

import torch
import torch.nn as nn

import qccl

TIMEOUT = 2.0     # qccl.init's: bounds a call that waits for a rank that shut down first
JOIN = 30.0       # how long a thread may take to stop; past it the test fails
ONES = 1 << 20    # elements of the tensors the threads reduce: long enough to be in flight


def shut_down_error(error):
    return isinstance(error, qccl.InvalidArgument) and "shut down" in str(error)


def hook_closed_error(error, closer):
    return isinstance(error, qccl.InvalidArgument) and \
        f"DDP hook was closed ({closer})" in str(error)


class Looper(threading.Thread):
    """Runs `call` until it raises an error other than a timeout or a
    cancelled call (see only_skew_errors). Counts the calls that returned,
    keeps the error that ended the loop (`last`) and the types of the others."""

    def __init__(self, call, go=None):
        super().__init__(daemon=True)
        self.call, self.go = call, go
        self.calls, self.last, self.skew = 0, None, set()

    def run(self):
        if self.go is not None:
            self.go.wait(JOIN)
        while True:
            try:
                self.call()
                self.calls += 1
            except (qccl.TimeoutError, qccl.CommError) as error:
                self.skew.add(type(error))
            except Exception as error:  # pylint: disable=broad-except
                self.last = error
                return

    def joined(self):
        self.join(JOIN)
        assert not self.is_alive(), f"a thread still runs {JOIN} s after the close"
        return self


def mid_call(looper):
    """Returns about half-way through one of `looper`'s calls: it times two
    calls, waits for the next to start and half its duration more. On
    several ranks a peer may shut down first: this rank's calls then fail
    (skew errors) and never succeed again, so the waits give up at once;
    the race is only likelier then, not required. A thread that neither
    succeeds nor fails for JOIN seconds fails the test."""
    def progressed(count):
        return looper.calls >= count or looper.skew or looper.last is not None

    try:
        until(lambda: progressed(2), "the thread's first calls")
        first, start = looper.calls, time.monotonic()
        until(lambda: progressed(first + 2), "two more calls")
    except AssertionError as error:
        raise AssertionError(f"{error}; the thread made {looper.calls} calls and stopped with "
                             f"{looper.last!r} (skew errors {looper.skew})") from None
    if looper.skew or looper.last is not None:
        return
    duration = (time.monotonic() - start) / 2
    now = looper.calls
    deadline = time.monotonic() + 4 * duration
    while looper.calls == now and time.monotonic() < deadline:
        time.sleep(duration / 50)
    time.sleep(duration / 2)


def until(predicate, what, limit=JOIN):
    deadline = time.monotonic() + limit
    while not predicate():
        assert time.monotonic() < deadline, f"waited {limit} s for {what}"
        time.sleep(0.001)


def only_skew_errors(looper, size, what):
    """Errors before the last: none on one rank. On several ranks a thread
    may start one call more than its peer did before the peer closed; that
    call times out (or is cancelled), and the calls after it find the
    communicator failed: qccl errors naming the cause, never a crash."""
    assert size > 1 or not looper.skew, f"{what}: {looper.skew}"


# --- qccl.init() twice ---

def init_settings(rank, size):
    context = qccl.init(timeout=TIMEOUT)
    assert qccl.init() is context and qccl.init(timeout=TIMEOUT) is context
    try:
        qccl.init(timeout=2 * TIMEOUT)
    except qccl.InvalidArgument as error:
        message = str(error)
        assert f"timeout={TIMEOUT:g}" in message and f"timeout={2 * TIMEOUT:g}" in message, message
        assert "already initialised" in message, message
    else:
        raise AssertionError("qccl.init() with another timeout kept the first one silently")
    assert qccl.init() is context and context.timeout == TIMEOUT
    # A timeout that is not a number of seconds in (0, 30 days] is qccl's
    # error, naming the range, here and for a Compressor.
    for bad in (-5, 0, float("nan"), 1e300):
        for call in (lambda: qccl.init(timeout=bad),
                     lambda: qccl.Compressor("fp32", timeout=bad)):
            try:
                call()
            except qccl.InvalidArgument as error:
                assert "2592000" in str(error), str(error)
            else:
                raise AssertionError(f"a timeout of {bad} was accepted")


# --- one Compressor, two threads ---

def compressor_threads(rank, size):
    """Two threads share a Compressor while a third reads its state: each
    call holds the codec and the communicator by itself, so every result is
    the exact mean (all ranks reduce ones), and the steps add up."""
    compressor = qccl.Compressor("global-qsgd:bits=8")
    calls = 150
    go = threading.Barrier(3)
    failures = []

    def reduce():
        go.wait(JOIN)
        t = torch.ones(1 << 14)
        try:
            for _ in range(calls):
                compressor.allreduce_mean_(t)
                assert torch.equal(t, torch.ones(1 << 14)), t[:4]
        except Exception as error:  # pylint: disable=broad-except
            failures.append(error)

    def read():
        go.wait(JOIN)
        while any(t.is_alive() for t in reducers):
            compressor.state_dict()
            compressor.error_bound(1.0)

    reducers = [threading.Thread(target=reduce) for _ in range(2)]
    reader = threading.Thread(target=read)
    for t in reducers + [reader]:
        t.start()
    for t in reducers + [reader]:
        t.join(JOIN)
    assert not failures, [f"{type(e).__name__}: {e}" for e in failures]
    assert compressor.state_dict()["step"] == 2 * calls


# --- a hook state closed or deleted while its buckets are in flight ---

class Bucket:
    """What DDP hands a communication hook: the flat gradient buffer, the
    parameters it holds and its index."""

    def __init__(self, model, value):
        self._parameters = list(model.parameters())
        self._buffer = torch.full((sum(p.numel() for p in self._parameters),), value)

    def buffer(self):
        return self._buffer

    def parameters(self):
        return self._parameters

    def index(self):
        return 0


def check_futures(futures, size, what):
    """Every future handed out before the close is complete; a bucket's
    mean is its value (every rank sent the same)."""
    for value, future in futures:
        assert future.done(), f"{what}: a bucket queued before the close is still in flight"
        try:
            mean = future.value()
        except (qccl.TimeoutError, qccl.CommError) as error:  # a bucket the peer never sent
            assert size > 1, f"{what}: {error}"
        else:
            assert torch.equal(mean, torch.full_like(mean, value)), mean[:4]


def hook_close(rank, size):
    """A thread hands the hook buckets and another saves its state while the
    main thread closes it: close() returns only once every bucket queued
    before it has completed, and later calls fail saying the hook was closed."""
    model = nn.Linear(64, 64)
    for round_ in range(6):
        state, hook = qccl.ddp_hook(model, "fp32", timeout=0.5)
        futures = []
        go = threading.Barrier(3)
        value = float(round_ + 1)

        def submit_some(state=state, hook=hook, value=value):  # a few in flight, as in backward
            first = None
            for _ in range(4):
                future = hook(state, Bucket(model, value))
                futures.append((value, future))
                first = first or future
            first.wait()

        submitter = Looper(submit_some, go)
        saver = Looper(state.state_dict, go)
        submitter.start()
        saver.start()
        go.wait(JOIN)
        until(lambda: submitter.calls >= 5 and saver.calls >= 2, "the threads' first calls")
        state.close()
        in_flight_at_close = list(futures)
        check_futures(in_flight_at_close, size, "DDPHookState.close()")
        for thread in (submitter.joined(), saver.joined()):
            assert hook_closed_error(thread.last, "DDPHookState.close()"), repr(thread.last)
            only_skew_errors(thread, size, "before DDPHookState.close()")
        check_futures(futures, size, "DDPHookState.close()")
        state.close()  # idempotent
        assert state.bytes_sent >= 0
        try:
            state.state_dict()
        except qccl.InvalidArgument as error:
            assert hook_closed_error(error, "DDPHookState.close()"), error
        else:
            raise AssertionError("state_dict() of a closed hook")

    # Deleting the last reference to a state with buckets queued waits for them.
    state, hook = qccl.ddp_hook(model, "fp32", timeout=0.5)
    futures = [(2.0, hook(state, Bucket(model, 2.0))) for _ in range(8)]
    del state, hook
    gc.collect()
    check_futures(futures, size, "deleting the hook state")


# --- qccl.shutdown() while other threads use qccl ---

def shutdown_during_allreduce(rank, size):
    """The main thread shuts down while another loops qccl.allreduce_mean_ on
    a large tensor: the call in flight completes (with the exact mean), the
    next one fails saying qccl was shut down."""
    qccl.init(timeout=TIMEOUT)
    t = torch.ones(ONES)
    looper = Looper(lambda: qccl.allreduce_mean_(t, "global-qsgd:bits=8"))
    looper.start()
    mid_call(looper)
    qccl.shutdown()
    looper.joined()
    if not looper.skew:  # the mean of ones, also from the call in flight
        assert torch.equal(t, torch.ones(ONES)), t[:4]
    assert shut_down_error(looper.last), repr(looper.last)
    only_skew_errors(looper, size, "before qccl.shutdown()")
    assert not qccl.is_initialized()
    qccl.shutdown()  # idempotent
    for call in (lambda: qccl.init(), lambda: qccl.allreduce_mean_(t)):
        try:
            call()
        except qccl.InvalidArgument as error:
            assert shut_down_error(error), error
        else:
            raise AssertionError("a call after qccl.shutdown() ran")


def shutdown_from_compressor_thread(rank, size):
    """Two threads share a Compressor; after a few calls one of them shuts
    qccl down half-way through the other's call, and the main thread shuts
    down at the same time. Both threads' next calls fail saying qccl was shut
    down; every call that ran gave the mean."""
    qccl.init(timeout=TIMEOUT)
    compressor = qccl.Compressor("global-qsgd:bits=8", timeout=TIMEOUT)
    tensors = [torch.ones(ONES), torch.ones(ONES)]
    go = threading.Barrier(3)
    closing = threading.Event()

    def reduce_then_shut_down():
        for _ in range(3):  # on several ranks a call may fail when the peer shut down first
            try:
                compressor.allreduce_mean_(tensors[1])
            except (qccl.TimeoutError, qccl.CommError) as error:
                closer.skew.add(type(error))
        mid_call(looper)
        closing.set()
        qccl.shutdown()
        compressor.allreduce_mean_(tensors[1])

    looper = Looper(lambda: compressor.allreduce_mean_(tensors[0]), go)
    closer = Looper(reduce_then_shut_down, go)
    looper.start()
    closer.start()
    go.wait(JOIN)
    closing.wait(JOIN)
    qccl.shutdown()
    for thread in (looper.joined(), closer.joined()):
        assert shut_down_error(thread.last), repr(thread.last)
        only_skew_errors(thread, size, "before qccl.shutdown()")
    for thread, t in zip((looper, closer), tensors):
        if not thread.skew:  # a call that failed part-way leaves its tensor undefined
            assert torch.equal(t, torch.ones(ONES)), t[:4]
    assert not qccl.is_initialized()


def shutdown_during_hook_work(rank, size):
    """A thread creates hooks and hands them buckets while the main thread
    shuts down: the buckets queued before complete, the hook being created
    is either refused or closed, and the thread stops with an error saying
    qccl was shut down or its hook was closed by it."""
    qccl.init(timeout=TIMEOUT)
    model = nn.Linear(64, 64)
    futures = []

    def work():
        state, hook = qccl.ddp_hook(model, "fp32", timeout=0.5)
        for _ in range(4):
            futures.append((1.0, hook(state, Bucket(model, 1.0))))

    looper = Looper(work)
    looper.start()
    mid_call(looper)
    qccl.shutdown()
    in_flight_at_shutdown = list(futures)
    check_futures(in_flight_at_shutdown, size, "qccl.shutdown()")
    looper.joined()
    last = looper.last
    assert shut_down_error(last) or hook_closed_error(last, "qccl.shutdown()"), repr(last)
    only_skew_errors(looper, size, "before qccl.shutdown()")
    check_futures(futures, size, "qccl.shutdown()")


def main(names):
    qccl.init(timeout=TIMEOUT)
    rank, size = qccl.rank(), qccl.size()
    torch.set_num_threads(1)
    for name in names:
        started = time.monotonic()
        try:
            globals()[name](rank, size)
        except Exception as error:  # pylint: disable=broad-except
            print(f"FAIL {name} on rank {rank} of {size}: {type(error).__name__}: {error}",
                  file=sys.stderr, flush=True)
            os._exit(1)  # the other ranks would wait for this one
        if rank == 0:
            print(f"ok {name} ({size} ranks, {time.monotonic() - started:.2f} s)", flush=True)
    qccl.shutdown()


if __name__ == "__main__":
    main(sys.argv[1:])
