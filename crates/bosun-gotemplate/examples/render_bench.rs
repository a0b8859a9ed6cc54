//! Times parsing and rendering a chart-like template set: helpers `include`d in loops, sprig
//! in pipelines. `cargo run --release -p bosun-gotemplate --example render_bench`.

use std::time::Instant;

use bosun_gotemplate::{Context, FuncError, Function, MissingKey, Template, Type, Value, sprig};

fn include(ctx: &mut Context<'_>, args: Vec<Value>) -> Result<Value, FuncError> {
    Ok(Value::from(ctx.execute_template(args[0].as_str().unwrap_or_default(), &args[1])?))
}

const HELPERS: &str = r#"
{{- define "chart.name" -}}{{ default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}{{- end }}
{{- define "chart.labels" -}}
app.kubernetes.io/name: {{ include "chart.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 }}
{{- end }}"#;

const DEPLOYMENT: &str = r#"{{- range $i, $svc := .Values.services }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "chart.name" $ }}-{{ $svc.name }}
  labels:
    {{- include "chart.labels" $ | nindent 4 }}
spec:
  replicas: {{ $svc.replicas | default 1 }}
  template:
    spec:
      containers:
        - name: {{ $svc.name }}
          image: "{{ $svc.image.repository }}:{{ $svc.image.tag | default "latest" }}"
          env:
          {{- range $k, $v := $svc.env }}
            - name: {{ $k | upper }}
              value: {{ $v | quote }}
          {{- end }}
          resources: {{ toJson $svc.resources }}
---
{{- end }}"#;

fn main() {
    let services: Vec<serde_json::Value> = (0..50)
        .map(|i| {
            serde_json::json!({
                "name": format!("svc{i}"), "replicas": i % 3,
                "image": {"repository": "registry.example/app", "tag": format!("1.{i}.0")},
                "env": {"a": "1", "b": "two", "c": i}, "resources": {"limits": {"cpu": "100m", "memory": "128Mi"}}
            })
        })
        .collect();
    let data = Value::from(serde_json::json!({
        "Chart": {"Name": "bench", "Version": "1.0.0+build"},
        "Release": {"Name": "r1"},
        "Values": {"services": services}
    }));
    let start = Instant::now();
    let mut t = Template::new("gotpl");
    t.add_funcs(sprig::functions());
    t.add_func("include", Function::new([Type::String, Type::Any], Type::String, include));
    t.set_missing_key(MissingKey::Zero);
    for i in 0..200 {
        t.parse(&format!("templates/_helpers{i}.tpl"), HELPERS).unwrap();
        t.parse(&format!("templates/deployment{i}.yaml"), DEPLOYMENT).unwrap();
    }
    let parsed = start.elapsed();
    let start = Instant::now();
    let mut bytes = 0;
    for i in 0..200 {
        bytes += t.render(&format!("templates/deployment{i}.yaml"), &data).unwrap().len();
    }
    let rendered = start.elapsed();
    println!("parsed 400 templates in {parsed:?}; rendered 200 × 50 deployments ({bytes} bytes) in {rendered:?}");
}
