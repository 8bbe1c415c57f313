#!/usr/bin/env python3
"""Schedule a deadline with confluent-kafka: confluent.py [ID [DELAY_SECONDS]]."""
import os
import re
import sys
import time

from confluent_kafka import Producer

BROKERS = os.environ.get("HOURGLASS_BROKERS", "127.0.0.1:9092")
PREFIX = os.environ.get("HOURGLASS_TOPIC_PREFIX", "hourglass.")  # the router's --topic-prefix
TIERS = os.environ.get("HOURGLASS_TIERS",  # the router's --tiers
                       "1m,2m,5m,10m,30m,1h,3h,12h,24h,72h,168h,720h,2160h,6480h")
TOLERANCE_MS = 10  # tiers.Tolerance


def tier_ms(name):
    """A tier in Go duration syntax (1m, 1h30m, 500ms) in milliseconds."""
    units = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}
    return sum(int(n) * units[u] for n, u in re.findall(r"(\d+)(ms|s|m|h)", name))


def delay_topic(delay_ms):
    """The largest tier not longer than the delay, or the smallest tier."""
    tiers = sorted(TIERS.split(","), key=tier_ms)
    fits = [t for t in tiers if tier_ms(t) <= delay_ms + TOLERANCE_MS]
    return PREFIX + "delay." + (fits[-1] if fits else tiers[0])


def main(task_id="order-42", delay_s="1800"):
    producer = Producer({
        "bootstrap.servers": BROKERS,
        "enable.idempotence": True,
        "partitioner": "murmur2_random",  # as the Java and Go clients: one order, one partition
        "message.timeout.ms": 10_000,
    })
    failed = []

    def delivered(err, msg):
        if err is not None:
            failed.append(err)

    now_ms = int(time.time() * 1000)
    due_ms = now_ms + int(delay_s) * 1000  # unix milliseconds: int(time.time()) is seconds
    producer.produce(
        delay_topic(due_ms - now_ms),
        key=task_id.encode(),
        value=b'{"order":"%s"}' % task_id.encode(),
        headers=[
            ("hourglass-due", str(due_ms).encode("ascii")),        # required: unix ms, decimal ASCII
            ("hourglass-kind", b"order-timeout"),                  # optional
            ("hourglass-scheduled", str(now_ms).encode("ascii")),  # optional, for lateness reports
        ],
        on_delivery=delivered,
    )
    if producer.flush(15) > 0 or failed:
        sys.exit(f"schedule {task_id}: not delivered: {failed or 'flush timed out'}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
