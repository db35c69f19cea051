"""Ctrl-C around Numba calls that return arrays (noc.base.interrupts)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from noc.base.interrupts import interrupts_deferred


def test_a_sigint_inside_the_block_is_raised_when_it_ends():
    reached_end_of_block = False
    with pytest.raises(KeyboardInterrupt):
        with interrupts_deferred():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # the handler runs here, at a bytecode boundary
            reached_end_of_block = True
    assert reached_end_of_block
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_no_sigint_means_no_exception_and_the_handler_is_restored():
    before = signal.getsignal(signal.SIGINT)
    with interrupts_deferred():
        pass
    assert signal.getsignal(signal.SIGINT) is before


CHILD = textwrap.dedent("""
    import time
    from noc.topology import parse_spec
    from noc.flit import FlitNetworkConfig, build_network, new_state
    net = build_network(parse_spec("mesh:3x3"), FlitNetworkConfig(num_vcs=2))
    new_state(net, 10)
    print("ready", flush=True)
    t0 = time.monotonic()
    while True:
        try:
            while time.monotonic() - t0 < 4:
                new_state(net, 2000)
            break
        except KeyboardInterrupt:
            pass
""")


def test_ctrl_c_while_new_state_returns_raises_keyboardinterrupt_not_a_crash():
    """Without the deferral, a SIGINT that lands while Numba builds new_state's namedtuple of
    arrays crashed the process (SIGSEGV) or left a SystemError chain; a few hundred signals
    over four seconds of calls hit that window every time this was measured."""
    proc = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().startswith("ready"), proc.communicate()
        rng = random.Random(0)
        while proc.poll() is None:
            time.sleep(rng.random() * 0.004)
            try:
                proc.send_signal(signal.SIGINT)
            except ProcessLookupError:
                break
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != -signal.SIGSEGV, err[-2000:]
    assert "SystemError" not in err and "Fatal Python error" not in err, err[-2000:]
