#!/bin/sh
# Prints a ConfigMap built from the files in ./settings, named by the configuration.
set -eu
name=$(printf '%s' "$BOSUN_CONFIG" | sed -n 's/.*"name":"\([^"]*\)".*/\1/p')
kubectl create configmap "${name:-settings}" --from-file=settings/ --dry-run=client -o yaml
