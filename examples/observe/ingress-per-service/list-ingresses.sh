#!/bin/sh
# Prints the Ingresses add-ingress.sh made, as NAMESPACE/NAME: those whose Service is gone
# (even while bosun observe was not running) get delete-ingress.sh.
set -eu
kubectl get ingresses --all-namespaces -l app.kubernetes.io/managed-by=bosun-observe \
  -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name}{"\n"}{end}'
