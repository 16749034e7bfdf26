#!/usr/bin/env bash
# Makes sure the system tools the tests use are installed: the etcd server
# binary (tests start their own etcd on free loopback ports), etcdctl and
# openssl (the etcd TLS and auth test makes its own CA and users), and
# iproute2's `ip` (the partition e2e test cuts a veth pair between network
# namespaces), and curl (the mTLS tests call the registrar with `curl --cert`),
# and promtool (test/deploy/monitoring.test.ts checks and unit-tests the alert
# rules with it), and chromium (the console's browser tests drive Debian's
# /usr/bin/chromium headless through playwright-core).
# kubectl renders the manifests when present (its tests say so
# and skip when it is absent).
# Installs Debian's packages when they are missing and we are root; otherwise
# says what to install.
set -euo pipefail

# promtool ships in Debian's `prometheus` package, whose postinst starts the
# Prometheus server (port 9090) where an init system lets it. Only the promtool
# binary is taken from the package (apt-get download, then dpkg-deb): no
# maintainer script runs, no daemon starts, nothing else is installed.
install_promtool() {
  local dir
  dir="$(mktemp -d)"
  chmod 755 "$dir"
  (cd "$dir" && apt-get download -qq prometheus >/dev/null 2>&1) \
    && dpkg-deb --fsys-tarfile "$dir"/prometheus_*.deb | tar -x -C "$dir" ./usr/bin/promtool \
    && install -m 0755 "$dir/usr/bin/promtool" /usr/local/bin/promtool
  local status=$?
  rm -rf "$dir"
  return "$status"
}

missing=()
command -v etcd >/dev/null 2>&1 || missing+=(etcd-server)
command -v etcdctl >/dev/null 2>&1 || missing+=(etcd-client)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v curl >/dev/null 2>&1 || missing+=(curl)
[ -x /usr/bin/chromium ] || missing+=(chromium)
need_promtool=()
command -v promtool >/dev/null 2>&1 || need_promtool=(promtool)
if [ "${#missing[@]}" -eq 0 ] && [ "${#need_promtool[@]}" -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${missing[*]} ${need_promtool[*]} (from Debian packages; the tests need them)" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  if [ "${#missing[@]}" -gt 0 ]; then apt-get install -y -qq "${missing[@]}" >/dev/null; fi
  if [ "${#need_promtool[@]}" -gt 0 ]; then install_promtool || true; fi
  # Debian's etcd package may start a system etcd on the default ports; the tests do not use it.
  if command -v systemctl >/dev/null 2>&1; then systemctl disable --now etcd >/dev/null 2>&1 || true; fi
  if command -v etcd >/dev/null 2>&1 && command -v etcdctl >/dev/null 2>&1 \
    && command -v openssl >/dev/null 2>&1 && command -v ip >/dev/null 2>&1 \
    && command -v curl >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1 \
    && [ -x /usr/bin/chromium ]; then
    exit 0
  fi
fi
if [ "${#missing[@]}" -gt 0 ]; then
  echo "missing ${missing[*]}: run 'sudo apt-get install -y ${missing[*]}' (Debian/Ubuntu), then retry" >&2
fi
if [ "${#need_promtool[@]}" -gt 0 ]; then
  echo "missing promtool: it is in Debian's prometheus package (the script takes only the binary: apt-get download prometheus, then dpkg-deb), then retry" >&2
fi
echo "(the suite also needs root for its network-namespace partition test)" >&2
exit 1
