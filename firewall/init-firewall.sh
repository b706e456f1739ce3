#!/bin/bash
# The box's network walls. Runs as root before the worker exists.
#
# IPv4: the public internet is open; the Mac (by every address box found for it,
# IMD_BOX_HOST_ADDRS), the home network, Tailscale, cloud metadata, multicast,
# broadcast and anycast (by range and by address type, so a directed broadcast
# on any subnet is refused too) and DNS to anything but the container's own
# resolvers are REJECTed (fast, so a probe sees a refusal, not a hang).
# IPv6: refused everywhere but loopback. Only the filter tables are replaced:
# Docker's nat rules for its embedded DNS (127.0.0.11) stay as they are.
#
# Like a test, it ends by reading every rule back and comparing it with what it
# meant to set; any difference exits non-zero and the worker never starts.
set -euo pipefail
# Root: commands come only from the image's system directories, and the tools
# that decide the walls are named by path.
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
readonly IPTABLES=/usr/sbin/iptables IP6TABLES=/usr/sbin/ip6tables

say() { echo "imd-box firewall: $*" >&2; }
die() { say "FAILED: $*"; exit 1; }

# The special-purpose and private IPv4 ranges the worker must never reach, and the loopback's
# among them: worker/paths REFUSED_V4 and LOOPBACK_V4 (from imdbox/layout.py, with why each).
# shellcheck source=worker/paths
. /usr/local/lib/imd-box/worker/paths
read -r -a BLOCKED_V4 <<<"$REFUSED_V4"
readonly BLOCKED_V4
readonly REJECT_V4='-j REJECT --reject-with icmp-admin-prohibited'
readonly REJECT_V6='-j REJECT --reject-with icmp6-adm-prohibited'

ipv4_addrs() { grep -E '^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$' || true; }
readonly OCTET='(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])'

# --- what to allow and refuse, learnt before any rule changes ----------------
# The Mac's (or the Linux host's) own addresses, found by `box` outside the box:
# only well-formed IPv4 addresses are taken; anything else stops the box.
HOST_ADDRS=()
read -r -a given <<<"${IMD_BOX_HOST_ADDRS:-}"
for a in "${given[@]}"; do
  [[ $a =~ ^$OCTET(\.$OCTET){3}$ ]] \
    || die "IMD_BOX_HOST_ADDRS holds '$a', which is not an IPv4 address (box passes the host's addresses there)"
  HOST_ADDRS+=("$a")
done

"$IPTABLES" -w -S >/dev/null 2>&1 \
  || die "cannot read the IPv4 rules: the box needs NET_ADMIN (run it with 'box', which grants it)"

# --- IPv6: nothing but loopback, in every chain --------------------------------
V6=(
  "-P INPUT DROP"
  "-P FORWARD DROP"
  "-P OUTPUT DROP"
  "-A INPUT -i lo -j ACCEPT"
  "-A INPUT $REJECT_V6"
  "-A FORWARD $REJECT_V6"
  "-A OUTPUT -o lo -j ACCEPT"
  # The kernel's own router solicitations, neighbour solicitations and multicast-listener
  # reports (no job can send these: they need a raw socket), refused by rules of their own,
  # so that the last rule's counter holds only attempts (`box status`).
  "-A OUTPUT -p ipv6-icmp -m icmp6 --icmpv6-type 133 $REJECT_V6"
  "-A OUTPUT -p ipv6-icmp -m icmp6 --icmpv6-type 135 $REJECT_V6"
  "-A OUTPUT -p ipv6-icmp -m icmp6 --icmpv6-type 143 $REJECT_V6"
  "-A OUTPUT $REJECT_V6"
)

apply() { # apply TOOL RULE...: the filter table becomes exactly these rules, in one transaction
  # TOOL-restore replaces the whole table (its rules and user chains) at once, or, on any
  # error, changes nothing (the box then stops here); one process, not one per rule.
  # The rules are in `iptables -S` form: -P policies, then -A rules. Every address in one
  # passed ipv4_addrs or the OCTET check, so no rule holds a newline: none can add a
  # line of its own (another table, a COMMIT) to what TOOL-restore reads.
  local tool=$1; shift
  local input rule chain policy out line
  input="*filter"
  for rule in "$@"; do
    case $rule in
      "-P "*) read -r _ chain policy <<<"$rule"; input+=$'\n'":$chain $policy [0:0]" ;;
      "-A "*) ;;
      *) die "$tool: not a rule this script writes: $rule" ;;
    esac
  done
  for rule in "$@"; do
    if [[ $rule == "-A "* ]]; then input+=$'\n'"$rule"; fi
  done
  input+=$'\n'"COMMIT"
  if ! out=$("$tool-restore" -w 2>&1 <<<"$input"); then
    # Its first line says what is wrong; the line it names is the rule, unless the kernel
    # refused the whole table at COMMIT (nf_tables checks a rule's target only there).
    line=$(sed -n 's/^Error occurred at line: \([0-9]*\)$/\1/p' <<<"$out")
    rule=$(if [ -n "$line" ]; then sed -n "${line}p" <<<"$input"; fi)
    [ "$rule" != COMMIT ] || rule=""
    die "$tool: the rules did not apply: $(head -1 <<<"$out")${rule:+ (at: $rule)}"
  fi
}

verify() { # verify TOOL RULE...: the table must read back as exactly these rules, in order
  local tool=$1; shift
  local want got
  want=$(printf '%s\n' "$@")
  got=$("$tool" -w -S) || die "$tool: cannot read the rules back"
  if [ "$want" != "$got" ]; then
    say "$tool rules differ from what was set:"
    diff <(echo "$want") <(echo "$got") >&2 || true
    die "$tool: rules did not read back"
  fi
}

# IPv6 policies go first: from the first IPv4 change on, no path may stay open. They are set and
# read back while the IPv4 rules are learnt below (which changes no rule): 20 ms of each start.
v6=""
if [ -e /proc/net/if_inet6 ]; then
  {
    apply "$IP6TABLES" "${V6[@]}"
    verify "$IP6TABLES" "${V6[@]}"
  } &
  v6=$!
  v6_note="IPv6 ${#V6[@]} rules"
else
  v6_note="IPv6 absent from this kernel"
fi

mapfile -t RESOLVERS < <(awk '$1 == "nameserver" {print $2}' /etc/resolv.conf | ipv4_addrs | sort -u)
# Every next hop in the routing table: on Docker Desktop that is the Mac's VM.
mapfile -t GATEWAYS < <(ip -4 route show table all | awk '{for (i = 1; i < NF; i++) if ($i == "via") print $(i + 1)}' | ipv4_addrs | sort -u)
# Docker Desktop's names for the Mac, whatever they resolve to right now.
# Bounded: on a network without an upstream resolver the lookup would hang.
mapfile -t NAMED_HOST < <(for name in host.docker.internal gateway.docker.internal; do
  timeout 2 getent ahostsv4 "$name" || true
done | awk '{print $1}' | ipv4_addrs | sort -u)

# --- the IPv4 rules, written exactly as `iptables -S` prints them back ---------
V4=(
  "-P INPUT DROP"
  "-P FORWARD DROP"
  "-P OUTPUT DROP"
  "-A INPUT -i lo -j ACCEPT"
  "-A INPUT -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT"
  "-A OUTPUT -o lo -j ACCEPT"
  "-A OUTPUT -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT"
)
for r in "${RESOLVERS[@]}"; do
  V4+=("-A OUTPUT -d $r/32 -p udp -m udp --dport 53 -j ACCEPT"
       "-A OUTPUT -d $r/32 -p tcp -m tcp --dport 53 -j ACCEPT")
done
# DNS anywhere else would let a job pick its own resolver (or tunnel out over it).
V4+=("-A OUTPUT -p udp -m udp --dport 53 $REJECT_V4"
     "-A OUTPUT -p tcp -m tcp --dport 53 $REJECT_V4")
# By the kernel's own type for the address: a directed broadcast of any subnet
# the box is on (198.51.100.255 is no private address), and every multicast.
for type in BROADCAST MULTICAST ANYCAST; do
  V4+=("-A OUTPUT -m addrtype --dst-type $type $REJECT_V4")
done
mapfile -t REFUSED_HOSTS < <(printf '%s\n' "${GATEWAYS[@]}" "${NAMED_HOST[@]}" "${HOST_ADDRS[@]}" | ipv4_addrs | sort -u)
for a in "${REFUSED_HOSTS[@]}"; do
  V4+=("-A OUTPUT -d $a/32 $REJECT_V4")
done
for net in "${BLOCKED_V4[@]}"; do
  if [ "$net" = "$LOOPBACK_V4" ]; then
    V4+=("-A OUTPUT -d $net ! -o lo $REJECT_V4")
  else
    V4+=("-A OUTPUT -d $net $REJECT_V4")
  fi
done
V4+=("-A OUTPUT -j ACCEPT")

# What failed in IPv6 said so in its own line.
[ -z "$v6" ] || wait "$v6" || exit 1
apply "$IPTABLES" "${V4[@]}"
verify "$IPTABLES" "${V4[@]}"

say "walls up and verified: IPv4 ${#V4[@]} rules (resolvers: ${RESOLVERS[*]:-none}; the Mac: ${REFUSED_HOSTS[*]:-none found}), $v6_note"
