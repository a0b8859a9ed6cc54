#!/bin/sh
# Registers a Service in a hosts-format DNS file ($DNS_FILE, default ./services.hosts):
# one "IP NAME.NAMESPACE.svc.cluster.local" line per Service. Run by:
#   bosun observe services -A -a '{.spec.clusterIP}' \
#     --delete examples/observe/dns-file/unregister.sh --names examples/observe/dns-file/names.sh \
#     -- examples/observe/dns-file/register.sh
# Arguments: NAMESPACE NAME CLUSTER_IP. Headless services (clusterIP None) are skipped.
set -eu
file=${DNS_FILE:-services.hosts}
namespace=$1 name=$2 ip=${3:-}
host="$name.$namespace.svc.cluster.local"
touch "$file"
# Drop the old line for this host, then add the current one (atomically, via a rename).
grep -v " $host\$" "$file" > "$file.tmp" || true
case "$ip" in
  ""|None) ;;
  *) echo "$ip $host" >> "$file.tmp" ;;
esac
mv "$file.tmp" "$file"
