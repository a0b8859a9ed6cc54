//! `bosun-bench render --helm`: a large generated chart (one template per app, each with
//! `include` and `tpl`) rendered by `bosun render` and by `helm template` where a `helm` binary
//! is on the PATH, beside bosun's jsonnet rendering the same objects — checked to be the same
//! objects before anything is timed.

use std::{fmt::Write as _, path::Path, process::Command};

use serde_json::Value;

use super::{ratio, shown, time};
use crate::bosun_binary;

const RELEASE: &str = "bench";

const HELPERS: &str = r#"{{- define "bench.labels" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
{{- end -}}
{{- define "bench.fullname" -}}
{{- printf "%s-%s" .root.Release.Name .name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
"#;

const VALUES: &str = r#"replicas: 2
image: nginx
tag: "1.27"
port: 8080
greeting: "hello from {{ .Release.Name }}"
"#;

/// One app's template: a Deployment, a Service and a ConfigMap.
fn app_template(name: &str) -> String {
    format!(
        r#"{{{{- $ctx := dict "root" $ "name" "{name}" }}}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{{{ include "bench.fullname" $ctx }}}}
  labels:
    {{{{- include "bench.labels" $ctx | nindent 4 }}}}
spec:
  replicas: {{{{ .Values.replicas }}}}
  selector:
    matchLabels:
      app.kubernetes.io/name: {name}
  template:
    metadata:
      labels:
        {{{{- include "bench.labels" $ctx | nindent 8 }}}}
    spec:
      containers:
      - name: app
        image: {{{{ printf "%s:%s" .Values.image .Values.tag | quote }}}}
        ports:
        - containerPort: {{{{ .Values.port }}}}
        env:
        - name: GREETING
          value: {{{{ tpl .Values.greeting $ | quote }}}}
---
apiVersion: v1
kind: Service
metadata:
  name: {{{{ include "bench.fullname" $ctx }}}}
  labels:
    {{{{- include "bench.labels" $ctx | nindent 4 }}}}
spec:
  selector:
    app.kubernetes.io/name: {name}
  ports:
  - port: 80
    targetPort: {{{{ .Values.port }}}}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{{{ include "bench.fullname" $ctx }}}}
  labels:
    {{{{- include "bench.labels" $ctx | nindent 4 }}}}
data:
  greeting: {{{{ tpl .Values.greeting $ | quote }}}}
"#
    )
}

/// The same objects as the chart, written as a jsonnet program would be.
fn jsonnet_program(apps: usize) -> String {
    format!(
        r#"local release = '{RELEASE}';
local labels(name) = {{
  'app.kubernetes.io/name': name,
  'app.kubernetes.io/instance': release,
  'app.kubernetes.io/managed-by': 'Helm',
}};
local values = {{replicas: 2, image: 'nginx', tag: '1.27', port: 8080, greeting: 'hello from ' + release}};
local app(name) = [
  {{
    apiVersion: 'apps/v1', kind: 'Deployment',
    metadata: {{name: release + '-' + name, labels: labels(name)}},
    spec: {{
      replicas: values.replicas,
      selector: {{matchLabels: {{'app.kubernetes.io/name': name}}}},
      template: {{
        metadata: {{labels: labels(name)}},
        spec: {{containers: [{{
          name: 'app', image: values.image + ':' + values.tag,
          ports: [{{containerPort: values.port}}],
          env: [{{name: 'GREETING', value: values.greeting}}],
        }}]}},
      }},
    }},
  }},
  {{
    apiVersion: 'v1', kind: 'Service',
    metadata: {{name: release + '-' + name, labels: labels(name)}},
    spec: {{selector: {{'app.kubernetes.io/name': name}}, ports: [{{port: 80, targetPort: values.port}}]}},
  }},
  {{
    apiVersion: 'v1', kind: 'ConfigMap',
    metadata: {{name: release + '-' + name, labels: labels(name)}},
    data: {{greeting: values.greeting}},
  }},
];
std.flattenArrays([app('app-%d' % i) for i in std.range(0, {apps} - 1)])
"#,
        apps = apps
    )
}

/// Writes the chart (`chart/`) and the jsonnet program (`main.jsonnet`) into `dir`.
fn write_inputs(dir: &Path, apps: usize) {
    let chart = dir.join("chart");
    std::fs::create_dir_all(chart.join("templates")).expect("chart directory");
    std::fs::write(chart.join("Chart.yaml"), "apiVersion: v2\nname: bench\nversion: 1.0.0\n").expect("Chart.yaml");
    std::fs::write(chart.join("values.yaml"), VALUES).expect("values.yaml");
    std::fs::write(chart.join("templates/_helpers.tpl"), HELPERS).expect("_helpers.tpl");
    for i in 0..apps {
        let name = format!("app-{i}");
        std::fs::write(chart.join(format!("templates/{name}.yaml")), app_template(&name)).expect("template");
    }
    std::fs::write(dir.join("main.jsonnet"), jsonnet_program(apps)).expect("main.jsonnet");
}

/// `bosun render` of `args`, as objects sorted by kind and name.
fn rendered_objects(args: &[&str]) -> Vec<Value> {
    let output = Command::new(bosun_binary()).arg("render").args(args).args(["-o", "json"]).output().expect("bosun");
    assert!(output.status.success(), "bosun render {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    let rendered: Value = serde_json::from_slice(&output.stdout).expect("bosun render -o json prints JSON");
    let mut objects = match rendered {
        Value::Array(items) => items,
        Value::Object(mut list) => match list.remove("items") {
            Some(Value::Array(items)) => items,
            _ => vec![Value::Object(list)],
        },
        other => vec![other],
    };
    objects.sort_by_key(|o| (o["kind"].to_string(), o["metadata"]["name"].to_string()));
    objects
}

/// Runs the Helm rendering benchmark and prints its Markdown table.
pub fn run(apps: usize, runs: usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    write_inputs(dir.path(), apps);
    let chart = dir.path().join("chart");
    let program = dir.path().join("main.jsonnet");
    let (chart, program) = (chart.to_str().expect("utf-8 path"), program.to_str().expect("utf-8 path"));
    let from_chart = rendered_objects(&[chart, "--release-name", RELEASE]);
    let from_jsonnet = rendered_objects(&["--jsonnet", program]);
    assert_eq!(from_chart.len(), apps * 3, "the chart renders three objects per app");
    assert!(from_chart == from_jsonnet, "the chart and the jsonnet program must render the same objects");

    eprintln!("helm, {apps} templates ({} objects): bosun render, helm template, bosun render --jsonnet…", apps * 3);
    let bosun = time(Command::new(bosun_binary()).args(["render", chart, "--release-name", RELEASE]), runs);
    let helm = time(Command::new("helm").args(["template", RELEASE, chart]), runs);
    let jsonnet = time(Command::new(bosun_binary()).args(["render", "--jsonnet", program]), runs);

    let mut table = String::new();
    let label = format!("Helm chart, {apps} templates ({} objects, `include` and `tpl`)", apps * 3);
    let _ = writeln!(table, "| workload | bosun render | alternative | alternative's time | alternative ÷ bosun |");
    let _ = writeln!(table, "|---|---|---|---|---|");
    let _ =
        writeln!(table, "| {label} | {} | helm template | {} | {} |", shown(bosun), shown(helm), ratio(helm, bosun));
    let _ = writeln!(
        table,
        "| {label} | {} | bosun render --jsonnet, the same objects | {} | {} |",
        shown(bosun),
        shown(jsonnet),
        ratio(jsonnet, bosun)
    );
    print!("{table}");
}
