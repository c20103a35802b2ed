"""The extension releases the GIL while it works, and Ctrl-C (SIGINT) stops a long bisection."""
import os
import signal
import sys
import threading
import time

import pytest

import lockstep
from conftest import REPO


def test_runs_release_the_gil(seed174):
    path, feeds, _ = seed174
    model = lockstep.compile(path, backend="cpu", threads=1)
    counter, done = [0], threading.Event()

    def count():
        while not done.is_set():
            counter[0] += 1

    t = threading.Thread(target=count)
    t.start()
    try:
        before = counter[0]
        for _ in range(5):
            model.run(None, feeds)  # tens of ms each: with the GIL held, the counter would stand still
        during = counter[0] - before
    finally:
        done.set()
        t.join()
    assert during > 1000


@pytest.mark.skipif(not hasattr(signal, "SIGINT"), reason="SKIPPED: no SIGINT here")
def test_ctrl_c_stops_a_bisection_between_runner_calls(seed174):
    pytest.importorskip("onnxruntime")
    import onnx
    path, feeds, _ = seed174
    convs = [n.name for n in onnx.load(path).graph.node if n.op_type == "Conv"]
    # A fault to hunt through fresh processes: about 10 runner calls, 35 s on a loaded 2-core machine.
    runner = (f"{sys.executable} {os.path.join(REPO, 'runners', 'faulty_runner.py')} "
              f"--node {convs[len(convs) // 2]} --inner ort")
    # The "Ctrl-C" comes from another thread while the second runner call is under way (the timer
    # starts at the first step, so that a fast host cannot finish before it fires).
    steps, timer = [], threading.Timer(0.05, lambda: os.kill(os.getpid(), signal.SIGINT))

    def step(message):
        steps.append(message)
        if len(steps) == 1:
            timer.start()

    # A shell that starts the tests in the background hands Python SIGINT ignored (then Python
    # installs no KeyboardInterrupt handler): put Python's own in place for this test.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    start = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            lockstep.bisect(path, ref="reference", test=runner, feeds=feeds, progress=step)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert len(steps) <= 3, steps  # stopped at the next runner call, not at the end
    assert time.monotonic() - start < 15
