function(
  name="jsonnet-guestbook-ui",
  image="example.com/guestbook-ui:v1",
  replicas=1,
  containerPort=80,
  servicePort=80,
  type="ClusterIP",
)
  [
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: name },
      spec: {
        type: type,
        selector: { app: name },
        ports: [{ port: servicePort, targetPort: containerPort }],
      },
    },
    {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: name },
      spec: {
        replicas: replicas,
        revisionHistoryLimit: 3,
        selector: { matchLabels: { app: name } },
        template: {
          metadata: { labels: { app: name } },
          spec: {
            containers: [{
              name: name,
              image: image,
              ports: [{ containerPort: containerPort }],
            }],
          },
        },
      },
    },
  ]
