// The configuration is `import 'generic-operator/config'` (as in Locutus) and
// `std.extVar('config')`; both are the same merged values.
local config = import 'generic-operator/config';
local k = import 'k.libsonnet';
local labels = { app: config.name };

{
  deployment: k.deployment(config.name, '%(repository)s:%(tag)s' % config.image, config.replicas, labels),
  service: k.service(config.name, labels, 80),
  settings: {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: config.name + '-settings' },
    data: { environment: std.extVar('environment'), replicas: std.toString(std.extVar('config').replicas) },
  },
}
