#!/usr/bin/env python3
"""Writes a synthetic PostgreSQL stderr log (prefix '%m|%u|%d|%c|') to stdout for
bench/replay_memory.sh: SESSIONS sessions running STATEMENTS statements in all, dealt
round-robin and interleaved as concurrent sessions are, a few statement shapes with
constants that vary: simple queries and extended-protocol executions with parameters.
With `distinct`, every statement is of a fingerprint of its own instead (a column
name of its own): a log of more statement shapes than a replay keeps apart.
With `churn`, sessions come and go without a logged disconnection (as with
log_disconnections off): each runs 10 statements, named prepared statements of its own
among them, and the next session takes the pid of one SESSIONS sessions ago (a
backend's pid reused); `churn-unique` is the same with a pid of its own for every
session, so nothing in the log shows that any session ended.

Usage: replay_log.py STATEMENTS SESSIONS [distinct | churn | churn-unique]
"""

import sys
from datetime import datetime, timedelta, timezone


def churn(total: int, sessions: int, unique: bool) -> None:
    """Sessions of 10 statements each, without logged ends (see the module doc)."""
    t0 = datetime(2026, 11, 28, 18, 0, 0, tzinfo=timezone.utc)
    write = sys.stdout.write
    us = 0
    for n in range(total // 10):
        pid = 1000 + (n if unique else n % sessions)
        t = t0 + timedelta(microseconds=us)
        stamp = f"{t:%Y-%m-%d %H:%M:%S}.{t.microsecond // 1000:03d} UTC"
        p = f"{stamp}|alice|shop|{0x6a000000 + n:x}.{pid:x}|"
        write(f"{p}LOG:  connection authorized: user=alice database=shop\n")
        for j in range(10):
            if j % 2:
                write(f"{p}LOG:  execute S_{j}: select $1::int + {j}\n")
                write(f"{p}DETAIL:  parameters: $1 = '{n % 997}'\n")
            else:
                write(f"{p}LOG:  statement: select {n % 1000} + {j}\n")
        us += 500


def main() -> None:
    total, sessions = int(sys.argv[1]), int(sys.argv[2])
    if sys.argv[3:] in (["churn"], ["churn-unique"]):
        churn(total, sessions, sys.argv[3] == "churn-unique")
        return
    distinct = sys.argv[3:] == ["distinct"]
    t0 = datetime(2026, 11, 28, 18, 0, 0, tzinfo=timezone.utc)
    out = sys.stdout
    write = out.write

    def prefix(us: int, s: int) -> str:
        t = t0 + timedelta(microseconds=us)
        return f"{t:%Y-%m-%d %H:%M:%S}.{t.microsecond // 1000:03d} UTC|alice|shop|6a0.{s:x}|"

    for s in range(sessions):
        write(prefix(s, s) + "LOG:  connection authorized: user=alice database=shop\n")
    us = sessions
    for i in range(total):
        s = i % sessions
        p = prefix(us, s)
        k = i % 4
        if distinct:
            write(f"{p}LOG:  statement: select c{i} from t where k = {i % 1000}\n")
        elif k == 0:
            write(f"{p}LOG:  statement: select {i % 1000} + 1 as x\n")
        elif k == 1:
            write(f"{p}LOG:  execute <unnamed>: select $1::int * 2, $2::text\n")
            write(f"{p}DETAIL:  parameters: $1 = '{i % 997}', $2 = 'v{i % 13}'\n")
        elif k == 2:
            write(f"{p}LOG:  statement: select length('{'x' * (i % 40)}')\n")
        else:
            write(f"{p}LOG:  execute <unnamed>: select $1::bigint + {i % 7}\n")
            write(f"{p}DETAIL:  parameters: $1 = '{i}'\n")
        # 50 µs of log per statement: 10 million statements span about 8 minutes.
        us += 50
    for s in range(sessions):
        write(
            prefix(us, s)
            + "LOG:  disconnection: session time: 0:08:20.000 user=alice database=shop host=[local]\n"
        )


if __name__ == "__main__":
    main()
