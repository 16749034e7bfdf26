#!/usr/bin/env bash
# Makes sure the system tools the tests use are installed: the etcd server
# binary (tests start their own etcd on free loopback ports), etcdctl and
# openssl (the etcd TLS and auth test makes its own CA and users), and
# iproute2's `ip` (the partition e2e test cuts a veth pair between network
# namespaces), and curl (the mTLS tests call the registrar with `curl --cert`).
# kubectl renders the manifests when present (its tests say so
# and skip when it is absent).
# Installs Debian's packages when they are missing and we are root; otherwise
# says what to install.
set -euo pipefail
missing=()
command -v etcd >/dev/null 2>&1 || missing+=(etcd-server)
command -v etcdctl >/dev/null 2>&1 || missing+=(etcd-client)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v curl >/dev/null 2>&1 || missing+=(curl)
if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${missing[*]} (Debian packages the tests need)" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq "${missing[@]}" >/dev/null
  # Debian's etcd package may start a system etcd on the default ports; the tests do not use it.
  if command -v systemctl >/dev/null 2>&1; then systemctl disable --now etcd >/dev/null 2>&1 || true; fi
  if command -v etcd >/dev/null 2>&1 && command -v etcdctl >/dev/null 2>&1 \
    && command -v openssl >/dev/null 2>&1 && command -v ip >/dev/null 2>&1 \
    && command -v curl >/dev/null 2>&1; then
    exit 0
  fi
fi
echo "missing ${missing[*]}: run 'sudo apt-get install -y ${missing[*]}' (Debian/Ubuntu), then retry" >&2
echo "(the suite also needs root for its network-namespace partition test)" >&2
exit 1
