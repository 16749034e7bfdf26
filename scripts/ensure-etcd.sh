#!/usr/bin/env bash
# Makes sure the etcd server binary the integration tests start is installed.
# Installs Debian's etcd-server when it is missing and we are root; otherwise
# says what to install. Tests start their own etcd on free loopback ports.
set -euo pipefail
if command -v etcd >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "etcd not found: installing Debian's etcd-server (tests start their own etcd)" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq etcd-server >/dev/null
  # Debian's package may start a system etcd on the default ports; the tests do not use it.
  if command -v systemctl >/dev/null 2>&1; then systemctl disable --now etcd >/dev/null 2>&1 || true; fi
  command -v etcd >/dev/null 2>&1 && exit 0
fi
echo "etcd is not installed: run 'sudo apt-get install -y etcd-server' (Debian/Ubuntu), then retry" >&2
exit 1
