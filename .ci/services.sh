#!/usr/bin/env bash
# Makes sure the services triad's tests need are up on this machine: NATS with JetStream on
# 127.0.0.1:4222, and a Docker daemon (for the sandbox and container tests). Idempotent.
set -euo pipefail

need_apt=()
command -v nats-server >/dev/null || need_apt+=(nats-server)
command -v dockerd >/dev/null || need_apt+=(docker.io)
command -v bwrap >/dev/null || need_apt+=(bubblewrap)
/usr/bin/python3 -c 'import seccomp' 2>/dev/null || need_apt+=(python3-seccomp)
[ -x /bin/busybox ] || need_apt+=(busybox-static)
command -v chromium >/dev/null || need_apt+=(chromium)
# The sandbox's toolchains (sandboxes/languages.ts): Debian's, under /usr, which the sandbox image
# bind-mounts. Checked by path: a rustc or go under ~/.cargo or /usr/local is not what the sandbox sees.
[ -x /usr/bin/javac ] || need_apt+=(default-jdk-headless)
[ -x /usr/bin/go ] || need_apt+=(golang-go)
[ -x /usr/bin/rustc ] || need_apt+=(rustc)
[ -f /usr/share/nodejs/typescript/lib/typescript.js ] || need_apt+=(node-typescript)
[ -x /usr/bin/g++ ] || need_apt+=(g++)
/usr/bin/python3 -c 'import numpy' 2>/dev/null || need_apt+=(python3-numpy)
dpkg -s libopenblas0-pthread >/dev/null 2>&1 || need_apt+=(libopenblas0-pthread)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "services: installing ${need_apt[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

if ! port_open 4222; then
  echo "services: starting nats-server on 127.0.0.1:4222"
  mkdir -p /var/lib/nats-server
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- \
    -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log
  for _ in $(seq 50); do port_open 4222 && break; sleep 0.1; done
fi

if ! docker info >/dev/null 2>&1; then
  echo "services: starting dockerd"
  nohup dockerd --bridge=none --iptables=false --ip-masq=false >/var/log/dockerd.log 2>&1 &
  for _ in $(seq 100); do docker info >/dev/null 2>&1 && break; sleep 0.3; done
  docker info >/dev/null 2>&1 || { echo "services: dockerd did not start; see /var/log/dockerd.log"; exit 1; }
fi
echo "services: nats on 127.0.0.1:4222, docker $(docker version --format '{{.Server.Version}}')"
