#!/bin/sh
# Gives a Service its own Ingress at NAME.NAMESPACE.example.com. Run by:
#   bosun observe services -n web -a '{.spec.ports[0].port}' \
#     --delete examples/observe/ingress-per-service/delete-ingress.sh \
#     --names examples/observe/ingress-per-service/list-ingresses.sh \
#     -- examples/observe/ingress-per-service/add-ingress.sh
# Arguments: NAMESPACE NAME PORT. The label marks the Ingresses this script owns.
set -eu
namespace=$1 name=$2 port=$3
kubectl apply -f - <<EOF
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: $name
  namespace: $namespace
  labels:
    app.kubernetes.io/managed-by: bosun-observe
spec:
  rules:
  - host: $name.$namespace.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service:
            name: $name
            port:
              number: $port
EOF
