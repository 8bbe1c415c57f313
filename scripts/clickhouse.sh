#!/usr/bin/env bash
# Installs Debian's ClickHouse (clickhouse-server, clickhouse-client) if it is
# missing, and starts it listening on 127.0.0.1 only if nothing answers on
# 127.0.0.1:9000 (the native protocol) yet. The recorder, the report command
# and their tests use it. It is idempotent and needs no systemd: the server
# runs in the background as the clickhouse user with Debian's
# /etc/clickhouse-server/config.xml, logging to /var/log/clickhouse-server.
# It prints one line saying what it did, or fails saying why.
#
# Environment: CLICKHOUSE_WAIT, how many seconds to wait for the server to
# answer after starting it (default 60).
set -euo pipefail

host=127.0.0.1
port=9000
wait_s=${CLICKHOUSE_WAIT:-60}
config=/etc/clickhouse-server/config.xml
logdir=/var/log/clickhouse-server
datadir=/var/lib/clickhouse

fail() {
  echo "clickhouse: $*" >&2
  exit 1
}

is_root() { [ "$(id -u)" -eq 0 ]; }

# answers reports whether a ClickHouse server answers SELECT 1 over the
# native protocol on host:port.
answers() {
  command -v clickhouse-client >/dev/null 2>&1 &&
    timeout 10 clickhouse-client --host "$host" --port "$port" --query 'SELECT 1' >/dev/null 2>&1
}

# port_open reports whether anything accepts connections on host:port.
port_open() {
  timeout 2 bash -c "exec 3<>/dev/tcp/$host/$port" >/dev/null 2>&1
}

version() {
  clickhouse-client --host "$host" --port "$port" --query 'SELECT version()' 2>/dev/null || echo unknown
}

did=()

# 1. Install.
installed() {
  { command -v clickhouse-server >/dev/null 2>&1 || [ -x /usr/sbin/clickhouse-server ]; } &&
    command -v clickhouse-client >/dev/null 2>&1
}
if ! installed; then
  command -v apt-get >/dev/null 2>&1 ||
    fail "clickhouse-server is not installed and there is no apt-get here; install ClickHouse and run it on $host:$port"
  is_root || fail "clickhouse-server is not installed; run this script as root (it runs apt-get install clickhouse-server clickhouse-client)"
  aptlog=$(mktemp)
  trap 'rm -f "$aptlog"' EXIT
  apt-get update -qq >"$aptlog" 2>&1 || { cat "$aptlog" >&2; fail "apt-get update failed"; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clickhouse-server clickhouse-client >"$aptlog" 2>&1 ||
    { cat "$aptlog" >&2; fail "apt-get install -y clickhouse-server clickhouse-client failed"; }
  did+=("installed clickhouse-server")
fi
server=$(command -v clickhouse-server 2>/dev/null || echo /usr/sbin/clickhouse-server)

# 2. Already running?
if answers; then
  if [ ${#did[@]} -eq 0 ]; then
    echo "clickhouse: already running on $host:$port (version $(version)); nothing to do"
  else
    echo "clickhouse: ${did[*]}; a server already answers on $host:$port (version $(version))"
  fi
  exit 0
fi
if port_open; then
  fail "something listens on $host:$port but does not answer SELECT 1 as ClickHouse; stop it or free the port"
fi

# 3. Start it without systemd, as the clickhouse user, on loopback only.
[ -r "$config" ] || fail "$config is missing; reinstall clickhouse-server"
id clickhouse >/dev/null 2>&1 || fail "the clickhouse user is missing; reinstall clickhouse-server"
run_as=()
if is_root; then
  install -d -o clickhouse -g clickhouse "$logdir" "$datadir"
  run_as=(runuser -u clickhouse --)
elif [ "$(id -un)" != clickhouse ]; then
  fail "nothing answers on $host:$port; run this script as root (or as clickhouse) to start the server"
fi
# Settings after -- override config.xml: listen on loopback only, so the
# server works on hosts without IPv6 and is never reachable from outside.
cd /
setsid "${run_as[@]}" "$server" --config-file="$config" -- --listen_host="$host" \
  >>"$logdir/clickhouse-server.stdout.log" 2>&1 </dev/null &
pid=$!

deadline=$((SECONDS + wait_s))
until answers; do
  why=""
  if ! kill -0 "$pid" 2>/dev/null; then
    why="exited"
  elif [ "$SECONDS" -ge "$deadline" ]; then
    why="did not answer SELECT 1 on $host:$port within ${wait_s}s"
  fi
  if [ -n "$why" ]; then
    echo "clickhouse: started $server (pid $pid) but it $why; last log lines:" >&2
    tail -n 20 "$logdir/clickhouse-server.err.log" "$logdir/clickhouse-server.stdout.log" >&2 2>/dev/null || true
    exit 1
  fi
  sleep 1
done
did+=("started clickhouse-server in the background on $host:$port (pid $pid, version $(version), logs in $logdir)")
echo "clickhouse: $(IFS=';'; echo "${did[*]}" | sed 's/;/; /g')"
