"""File lifetime against I/O in flight (review 2026-12-06-fxio H2, H3):
a cancelled future must not kill the file's completion thread, and
close() while another thread is inside read_into must wait for it, not
free the handle under it."""
import os
import subprocess
import sys
import textwrap

import numpy as np

import fxio


def test_cancel_leaves_the_file_usable(disk):
    """An IoFuture cannot be cancelled once submitted (the I/O runs on):
    cancel() is False, its result arrives, and the file's next async I/O
    completes. Before, cancel() of an I/O still running returned True, the
    completion thread died on set_result (InvalidStateError) and every
    later async I/O on the file hung."""
    path, data = disk
    with fxio.open(path, "r") as f:
        big = np.zeros(data.size, dtype=np.uint8)
        fut = f.submit_read(big, 0)
        cancelled = fut.cancel()
        small = np.zeros(4096, dtype=np.uint8)
        later = f.submit_read(small, 4096)
        assert later.result(timeout=60) == 4096, "the async I/O after a cancel never completed"
        assert not cancelled and not fut.cancelled()
        assert fut.result(timeout=60) == data.size and np.array_equal(big, data)
        assert np.array_equal(small, data[4096:8192])


def test_close_waits_for_a_read_in_flight(disk):
    """A thread loops 8 MiB read_into calls while the main thread closes
    the file (in a subprocess: the failure was a use-after-free). Each read
    either returns all its bytes or raises ValueError (closed); close()
    returns after the read in flight, the process exits 0."""
    path, _ = disk
    script = textwrap.dedent("""
        import sys, threading
        import numpy as np
        import fxio
        f = fxio.open(sys.argv[1], "r")
        buf = np.zeros(8 << 20, dtype=np.uint8)
        started, seen = threading.Event(), []
        def reader():
            try:
                while True:
                    started.set()
                    seen.append(f.read_into(buf, 0))
            except Exception as e:
                seen.append(repr(e))
        t = threading.Thread(target=reader)
        t.start()
        started.wait()
        for _ in range(3):  # some reads in, then close in the middle of one
            n = len(seen)
            while len(seen) == n:
                pass
        f.close()
        t.join()
        bad = [s for s in seen if s != 8 << 20 and not s.startswith("ValueError")]
        print("reads", len(seen) - 1, "end", seen[-1])
        sys.exit(1 if bad else 0)
    """)
    env = dict(os.environ, PYTHONFAULTHANDLER="1")
    r = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True,
                       text=True, timeout=300, env=env)
    assert r.returncode == 0, "exit %d: %s%s" % (r.returncode, r.stdout, r.stderr[-2000:])
    assert "ValueError" in r.stdout
