#!/bin/bash
# lab: kernels=debug members=2 timeout=1800 file=tests/lab/tests/45-peer-fuzz.sh:/lab/files/45-peer-fuzz.sh
# The peer ioctl fuzz of tests/lab/tests/45-peer-fuzz.sh for 300 s with 4
# threads a process, on the debug kernel (KASAN, lockdep, kmemleak objects
# tracked; make check-debug): an out-of-bounds access or use-after-free that
# a stock kernel survives silently is a KASAN report here, which fails the
# run. A new seed each run, printed; replay: pass SEED.
# Args: [SEED]
exec bash /lab/files/45-peer-fuzz.sh 300 "${1:-}" 4
