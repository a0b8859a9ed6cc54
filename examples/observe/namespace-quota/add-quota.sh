#!/bin/sh
# Gives a namespace a ResourceQuota. Run by:
#   bosun observe namespaces -a '{.status.phase}' -- examples/observe/namespace-quota/add-quota.sh
# Namespaces are cluster-scoped, so the arguments are NAME PHASE. Re-running is harmless:
# `kubectl apply` changes nothing when the quota is already as written here.
set -eu
namespace=$1
phase=${2:-Active}
case "$namespace" in
  kube-*) exit 0 ;;                 # leave the system namespaces alone
esac
[ "$phase" = Active ] || exit 0     # a terminating namespace refuses new objects
kubectl apply -f - <<EOF
apiVersion: v1
kind: ResourceQuota
metadata:
  name: default-quota
  namespace: $namespace
spec:
  hard:
    pods: "50"
    requests.cpu: "20"
    requests.memory: 64Gi
EOF
