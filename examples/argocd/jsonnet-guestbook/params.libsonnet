{
  name: "jsonnet-guestbook-ui",
  image: "example.com/guestbook-ui:v1",
  replicas: 1,
  containerPort: 80,
  servicePort: 80,
  type: "ClusterIP",
}
