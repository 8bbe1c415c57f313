#!/usr/bin/env bash
# Makes sure the order-store databases the tests use answer on loopback:
# PostgreSQL on 127.0.0.1:5432 (user postgres without a password, database
# test) and MariaDB on 127.0.0.1:3306 (root without a password, database
# test). A server that already answers is left alone. A missing one is
# installed from Debian's packages and started without systemd; only a server
# this script installed gets its loopback authentication opened for the tests
# (trust for postgres, an empty root password for MariaDB), since it holds
# nothing else. Idempotent; prints one line per database.
#
# Environment: HOURGLASS_TEST_POSTGRES_DSN / HOURGLASS_TEST_MYSQL_DSN point the
# tests at other servers; when set, this script does not touch that database.
set -euo pipefail

fail() { echo "databases: $*" >&2; exit 1; }
is_root() { [ "$(id -u)" -eq 0 ]; }
port_open() { timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" >/dev/null 2>&1; }
wait_port() {
  for _ in $(seq 1 60); do
    port_open "$1" && return 0
    sleep 1
  done
  return 1
}
apt_install() {
  command -v apt-get >/dev/null 2>&1 || fail "$* missing and there is no apt-get here; install it and run it on loopback"
  is_root || fail "$* missing; run scripts/deps.sh as root (it runs apt-get install $*)"
  local log
  log=$(mktemp)
  apt-get update -qq >"$log" 2>&1 || { cat "$log" >&2; fail "apt-get update failed"; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >"$log" 2>&1 || { cat "$log" >&2; fail "apt-get install $* failed"; }
  rm -f "$log"
}

postgres() {
  if [ -n "${HOURGLASS_TEST_POSTGRES_DSN:-}" ]; then
    echo "databases: postgres from HOURGLASS_TEST_POSTGRES_DSN; not touched"
    return
  fi
  if port_open 5432; then
    echo "databases: postgres answers on 127.0.0.1:5432"
    return
  fi
  local installed=no
  if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    apt_install postgresql
    installed=yes
  fi
  is_root || fail "postgres is installed but not running on 127.0.0.1:5432; start it (pg_ctlcluster <version> main start)"
  local version
  version=$(ls /etc/postgresql | sort -V | tail -n1)
  [ -n "$version" ] || fail "no cluster in /etc/postgresql; run pg_createcluster"
  if [ "$installed" = yes ]; then
    # A fresh server that only the tests use: trust loopback connections.
    local hba=/etc/postgresql/$version/main/pg_hba.conf
    sed -i -E 's/^(host\s+all\s+all\s+(127\.0\.0\.1\/32|::1\/128)\s+)\S+/\1trust/; s/^(local\s+all\s+all\s+)\S+/\1trust/' "$hba"
  fi
  pg_ctlcluster --skip-systemctl-redirect "$version" main start
  wait_port 5432 || fail "postgres $version did not start; see /var/log/postgresql"
  runuser -u postgres -- psql -qtAc "SELECT 1 FROM pg_database WHERE datname = 'test'" | grep -q 1 ||
    runuser -u postgres -- createdb test
  echo "databases: postgres $version started on 127.0.0.1:5432 (installed: $installed)"
}

mariadb() {
  if [ -n "${HOURGLASS_TEST_MYSQL_DSN:-}" ]; then
    echo "databases: mysql from HOURGLASS_TEST_MYSQL_DSN; not touched"
    return
  fi
  if port_open 3306; then
    echo "databases: mariadb answers on 127.0.0.1:3306"
    return
  fi
  local installed=no
  if [ ! -x /usr/sbin/mariadbd ]; then
    apt_install mariadb-server
    installed=yes
  fi
  is_root || fail "mariadb is installed but not running on 127.0.0.1:3306; start it"
  mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd -- --bind-address=127.0.0.1
  wait_port 3306 || fail "mariadb did not start; see /var/log/mysql"
  if [ "$installed" = yes ]; then
    # A fresh server that only the tests use: root over TCP without a password.
    mariadb -uroot -e "ALTER USER root@localhost IDENTIFIED VIA mysql_native_password USING PASSWORD('') OR unix_socket"
  fi
  mariadb -uroot -e "CREATE DATABASE IF NOT EXISTS test"
  echo "databases: mariadb started on 127.0.0.1:3306 (installed: $installed)"
}

postgres
mariadb
