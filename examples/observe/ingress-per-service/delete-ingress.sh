#!/bin/sh
# Deletes the Ingress of a deleted Service. Arguments: NAMESPACE NAME [LAST_PORT].
set -eu
kubectl delete ingress "$2" --namespace "$1" --ignore-not-found
