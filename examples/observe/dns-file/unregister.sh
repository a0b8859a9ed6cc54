#!/bin/sh
# Removes a deleted Service from the DNS file. Arguments: NAMESPACE NAME [LAST_CLUSTER_IP].
set -eu
file=${DNS_FILE:-services.hosts}
host="$2.$1.svc.cluster.local"
touch "$file"
grep -v " $host\$" "$file" > "$file.tmp" || true
mv "$file.tmp" "$file"
