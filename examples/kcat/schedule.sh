#!/bin/sh
# Schedule a deadline with kcat: schedule.sh [ID [DELAY_SECONDS]].
# kcat exits non-zero when the broker does not take the record.
set -eu
id=${1:-order-42}
delay_s=${2:-1800}
brokers=${HOURGLASS_BROKERS:-127.0.0.1:9092}
prefix=${HOURGLASS_TOPIC_PREFIX:-hourglass.} # the router's --topic-prefix
tiers=${HOURGLASS_TIERS:-1m,2m,5m,10m,30m,1h,3h,12h,24h,72h,168h,720h,2160h,6480h} # the router's --tiers

# The largest tier not longer than the delay (+10 ms, tiers.Tolerance), or the smallest.
tier=$(echo "$tiers" | tr , '\n' | awk -v d=$((delay_s * 1000 + 10)) '
  function ms(t,  v, n) {
    while (match(t, /^[0-9]+(ms|h|m|s)/)) {
      n = substr(t, 1, RLENGTH); t = substr(t, RLENGTH + 1)
      v += n * (n ~ /ms$/ ? 1 : n ~ /h$/ ? 3600000 : n ~ /m$/ ? 60000 : 1000)
    }
    return v
  }
  { v = ms($0) }
  min == "" || v < min { min = v; first = $0 }
  v <= d && v > best { best = v; pick = $0 }
  END { print (pick != "" ? pick : first) }')

# Unix milliseconds: whole seconds times 1,000, with any date and POSIX shell.
due=$(( $(date +%s) * 1000 + delay_s * 1000 ))
# -X partitioner=murmur2_random: the Java and Go clients' partitioner (kcat's default is CRC32).
echo "{\"order\":\"$id\"}" | kcat -P -b "$brokers" -X partitioner=murmur2_random \
  -X message.timeout.ms=10000 -t "${prefix}delay.$tier" -k "$id" \
  -H "hourglass-due=$due" -H hourglass-kind=order-timeout
