#!/usr/bin/env bash
# Test hosts for the exchange: network namespaces joined by a veth pair (or a bridge for N hosts).
#   netns.sh up PREFIX N      creates PREFIX1..PREFIXN on bridge PREFIX-br, 10.147.0.1..N/24,
#                             each with a 224.0.0.0/4 route so multicast leaves through its veth
#   netns.sh up6 PREFIX N     the same without IPv4 addresses: IPv6 link-local only
#   netns.sh down PREFIX N    removes them
# Needs root and iproute2. Traffic stays between these namespaces.
set -euo pipefail
cmd=$1 prefix=$2 n=$3
br="${prefix}br"
if [ "$cmd" = up ] || [ "$cmd" = up6 ]; then
  # No multicast snooping: a bridge that heard one host's IGMP join but missed another's (sent
  # while its port was coming up) forwards the group to the first alone, and the other host
  # never hears a probe or an announcement.
  ip link add "$br" type bridge mcast_snooping 0
  ip link set "$br" up
  for i in $(seq "$n"); do
    ns="${prefix}$i"
    ip netns add "$ns"
    # No duplicate address detection: link-local IPv6 is usable at once.
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0 >/dev/null 2>&1 || true
    ip link add "${prefix}h$i" type veth peer name "${prefix}p$i"
    ip link set "${prefix}h$i" netns "$ns"
    ip link set "${prefix}p$i" master "$br" up
    if [ "$cmd" = up ]; then ip -n "$ns" addr add "10.147.0.$i/24" dev "${prefix}h$i"; fi
    ip -n "$ns" link set "${prefix}h$i" up
    ip -n "$ns" link set lo up
    if [ "$cmd" = up ]; then ip -n "$ns" route add 224.0.0.0/4 dev "${prefix}h$i"; fi
  done
else
  for i in $(seq "$n"); do
    ip netns del "${prefix}$i" 2>/dev/null || true
    # A run killed between creating a veth pair and moving one end leaves both ends here.
    ip link del "${prefix}p$i" 2>/dev/null || true
    ip link del "${prefix}h$i" 2>/dev/null || true
  done
  ip link del "$br" 2>/dev/null || true
fi
