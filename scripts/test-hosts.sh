#!/usr/bin/env bash
# Test hosts for hvdrun's SSH tests, on this machine: K network namespaces hvdt1..hvdtK joined
# by veth pairs to the bridge hvdtbr0 (10.213.0.1/24), host i at 10.213.0.(10+i), each with its
# own hostname hvdt-h<i> (UTS namespace) and a real OpenSSH sshd. Needs root.
#
#   test-hosts.sh up K      create K hosts (tears down any previous set first)
#   test-hosts.sh down      kill every process in the namespaces, remove everything (idempotent)
#   test-hosts.sh stop I    stop host I's sshd          test-hosts.sh start I   start it again
#   test-hosts.sh rekey I   give host I a new host key; the state dir's known_hosts is updated,
#                           so a copy taken before now mismatches
#
# State dir ($HVDRUN_TEST_HOSTS_DIR, default /tmp/hvdrun-test-hosts): id_ed25519(.pub) (the
# only authorized key), known_hosts, ssh_config (`ssh -F <state>/ssh_config hvdt-h1`), count,
# and h<i>/ with sshd_config, host key, pid file and log. /etc/hosts gets one line per host,
# ending in "# hvdrun-test-hosts".
#
# The hosts share this machine's file system, except $PRIVATE (/tmp/hvdt-private): each sshd
# runs in its own mount namespace with an empty tmpfs there, so a directory made under it on
# this machine does not exist on the hosts (for "working directory missing" tests).
set -euo pipefail

STATE=${HVDRUN_TEST_HOSTS_DIR:-/tmp/hvdrun-test-hosts}
BRIDGE=hvdtbr0
NET=10.213.0
MARK='# hvdrun-test-hosts'
SSHD=/usr/sbin/sshd
MAX_HOSTS=64
PRIVATE=/tmp/hvdt-private

die() { echo "test-hosts.sh: $*" >&2; exit 1; }
addr() { echo "$NET.$((10 + $1))"; }
host_name() { echo "hvdt-h$1"; }
host_dir() { echo "$STATE/h$1"; }

require_root() {
  [[ $(id -u) -eq 0 ]] || die "must run as root (it creates network namespaces and runs sshd)"
  ip netns list >/dev/null 2>&1 || die "'ip netns' is not available here (iproute2 missing or no permission)"
  [[ -x $SSHD ]] || die "$SSHD not found: install openssh-server"
}

check_index() {
  if ! [[ $1 =~ ^[0-9]+$ ]] || (($1 < 1 || $1 > MAX_HOSTS)); then
    die "bad host index '$1' (1..$MAX_HOSTS)"
  fi
  [[ -d $(host_dir "$1") ]] || die "host $1 does not exist (run: $0 up K)"
}

# Every process whose network namespace is hvdtN.
netns_pids() { ip netns pids "$1" 2>/dev/null || true; }

kill_netns_processes() {
  local ns=$1 pids _
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    pids=$(netns_pids "$ns")
    [[ -z $pids ]] && return 0
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    sleep 0.05
  done
  echo "test-hosts.sh: warning: processes left in $ns: $(netns_pids "$ns" | tr '\n' ' ')" >&2
}

remove_etc_hosts_lines() {
  grep -q -- "$MARK\$" /etc/hosts 2>/dev/null || return 0
  local tmp
  tmp=$(mktemp)
  grep -v -- "$MARK\$" /etc/hosts >"$tmp" || true
  cat "$tmp" >/etc/hosts  # in place: /etc/hosts may be a bind mount that cannot be renamed over
  rm -f "$tmp"
}

cmd_down() {
  local ns link
  for ns in $(ip netns list | awk '{print $1}' | grep -E '^hvdt[0-9]+$' || true); do
    kill_netns_processes "$ns"
    ip netns delete "$ns" 2>/dev/null || true
  done
  for link in $(ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E '^hvdtv[0-9]+$' || true); do
    ip link delete "$link" 2>/dev/null || true
  done
  ip link delete "$BRIDGE" 2>/dev/null || true
  remove_etc_hosts_lines
  rm -rf "$STATE"
}

# OpenSSH's own limits are kept (MaxSessions 10 channels a connection, MaxStartups 10:30:100),
# so that the tests meet what users meet.
write_sshd_config() {
  local i=$1 dir
  dir=$(host_dir "$i")
  cat >"$dir/sshd_config" <<EOF
Port 22
ListenAddress $(addr "$i")
HostKey $dir/ssh_host_ed25519_key
PidFile $dir/sshd.pid
AuthorizedKeysFile $STATE/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
UseDNS no
PrintMotd no
PrintLastLog no
LogLevel INFO
EOF
}

start_sshd() {
  local i=$1 dir
  dir=$(host_dir "$i")
  rm -f "$dir/sshd.pid"
  # sshd binds, daemonizes, then writes its pid file: once the file exists it accepts.
  mkdir -p "$PRIVATE"
  ip netns exec "hvdt$i" unshare --uts --mount --propagation private sh -c \
    "mount -t tmpfs -o size=1m,mode=1777 hvdt-private '$PRIVATE' && hostname $(host_name "$i") &&
     exec $SSHD -f '$dir/sshd_config' -E '$dir/sshd.log'"
  local _
  for _ in $(seq 200); do
    [[ -s $dir/sshd.pid ]] && return 0
    sleep 0.01
  done
  die "sshd of host $i did not start within 2 s; see $dir/sshd.log"
}

stop_sshd() {
  local dir pid
  dir=$(host_dir "$1")
  [[ -s $dir/sshd.pid ]] || return 0
  pid=$(cat "$dir/sshd.pid")
  kill -TERM "$pid" 2>/dev/null || true
  local _
  for _ in $(seq 200); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.01
  done
  rm -f "$dir/sshd.pid"
}

write_known_hosts() {
  local count=$1 i tmp
  tmp=$(mktemp "$STATE/known_hosts.XXXXXX")
  for ((i = 1; i <= count; i++)); do
    echo "$(host_name "$i"),$(addr "$i") $(cut -d' ' -f1,2 "$(host_dir "$i")/ssh_host_ed25519_key.pub")"
  done >"$tmp"
  mv "$tmp" "$STATE/known_hosts"
}

setup_host() {
  local i=$1 ns="hvdt$1" dir
  dir=$(host_dir "$i")
  mkdir -p "$dir"
  ssh-keygen -q -t ed25519 -N '' -C "$(host_name "$i")" -f "$dir/ssh_host_ed25519_key"
  write_sshd_config "$i"
  ip netns add "$ns"
  ip link add "hvdtv$i" type veth peer name "hvdtp$i"
  ip link set "hvdtp$i" netns "$ns"
  ip link set "hvdtv$i" master "$BRIDGE" up
  ip -n "$ns" link set lo up
  ip -n "$ns" link set "hvdtp$i" name eth0
  ip -n "$ns" addr add "$(addr "$i")/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" route add default via "$NET.1"
  start_sshd "$i"
}

cmd_up() {
  local count=$1 i
  if ! [[ $count =~ ^[0-9]+$ ]] || ((count < 1 || count > MAX_HOSTS)); then
    die "up needs a host count 1..$MAX_HOSTS, got '$count'"
  fi
  cmd_down
  mkdir -p "$STATE" /run/sshd
  chmod 700 "$STATE"
  ssh-keygen -q -t ed25519 -N '' -C hvdrun-test-client -f "$STATE/id_ed25519"
  cp "$STATE/id_ed25519.pub" "$STATE/authorized_keys"
  ip link add "$BRIDGE" type bridge
  ip addr add "$NET.1/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  local pids=()
  for ((i = 1; i <= count; i++)); do
    setup_host "$i" &
    pids+=($!)
  done
  local failed=0
  for i in "${pids[@]}"; do wait "$i" || failed=1; done
  ((failed == 0)) || { cmd_down; die "setting up the hosts failed (see above)"; }
  echo "$count" >"$STATE/count"
  write_known_hosts "$count"
  cat >"$STATE/ssh_config" <<EOF
Host hvdt-h*
  User root
  IdentityFile $STATE/id_ed25519
  IdentitiesOnly yes
  UserKnownHostsFile $STATE/known_hosts
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  BatchMode yes
  ConnectTimeout 5
EOF
  for ((i = 1; i <= count; i++)); do
    echo "$(addr "$i") $(host_name "$i") $MARK"
  done >>/etc/hosts
}

cmd_rekey() {
  local i=$1 dir
  dir=$(host_dir "$i")
  rm -f "$dir/ssh_host_ed25519_key" "$dir/ssh_host_ed25519_key.pub"
  ssh-keygen -q -t ed25519 -N '' -C "$(host_name "$i")" -f "$dir/ssh_host_ed25519_key"
  stop_sshd "$i"
  start_sshd "$i"
  write_known_hosts "$(cat "$STATE/count")"
}

main() {
  local cmd=${1:-}
  case $cmd in
    up) require_root; cmd_up "${2:-}" ;;
    down) require_root; cmd_down ;;
    stop) require_root; check_index "${2:-}"; stop_sshd "$2" ;;
    start) require_root; check_index "${2:-}"; stop_sshd "$2"; start_sshd "$2" ;;
    rekey) require_root; check_index "${2:-}"; cmd_rekey "$2" ;;
    *) die "usage: $0 up K | down | stop I | start I | rekey I" ;;
  esac
}

main "$@"
