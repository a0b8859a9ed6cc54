local params = import 'params.libsonnet';

[
  {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: params.name },
    spec: {
      type: params.type,
      selector: { app: params.name },
      ports: [{ port: params.servicePort, targetPort: params.containerPort }],
    },
  },
  {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: params.name },
    spec: {
      replicas: params.replicas,
      revisionHistoryLimit: 3,
      selector: { matchLabels: { app: params.name } },
      template: {
        metadata: { labels: { app: params.name } },
        spec: {
          containers: [{
            name: params.name,
            image: params.image,
            ports: [{ containerPort: params.containerPort }],
          }],
        },
      },
    },
  },
]
