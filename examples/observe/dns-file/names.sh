#!/bin/sh
# Prints the Services the DNS file knows, as NAMESPACE/NAME lines, so that bosun observe can
# unregister the ones deleted while it was not running.
set -eu
file=${DNS_FILE:-services.hosts}
[ -f "$file" ] || exit 0
awk '{ split($2, part, "."); print part[2] "/" part[1] }' "$file"
