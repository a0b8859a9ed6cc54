// Tiny helpers in the style of k8s-libsonnet.
{
  deployment(name, image, replicas, labels):: {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: name, labels: labels },
    spec: {
      replicas: replicas,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels: labels },
        spec: { containers: [{ name: name, image: image, ports: [{ containerPort: 3000, name: 'http' }] }] },
      },
    },
  },
  service(name, labels, port):: {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: name, labels: labels },
    spec: { selector: labels, ports: [{ name: 'http', port: port, targetPort: 'http' }] },
  },
}
