#!/usr/bin/env python3
"""Waits until a `trellis serve` on a loopback port is ready (`/readyz` is
200), for at most a minute; exits non-zero, saying why, if the process
ends first or the minute passes.

    python3 scripts/wait_ready.py PORT PID
"""
import os
import sys
import time
import urllib.request


def main():
    port, pid = sys.argv[1], int(sys.argv[2])
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            os.kill(pid, 0)
        except OSError:
            sys.exit("trellis serve exited")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    sys.exit("trellis serve was not ready after 60 s")


if __name__ == "__main__":
    main()
