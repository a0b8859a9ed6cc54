use std::path::Path;

use serde_json::json;

use super::*;
use crate::load::load;
use crate::release::{Capabilities, KubeVersion, ReleaseOptions};
use crate::render::prepare;
use crate::test_files::write;
use crate::values::{ValueSources, Values};

fn chart_dir(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut all = vec![("c/Chart.yaml", "apiVersion: v2\nname: c\nversion: 0.1.0\n")];
    all.extend_from_slice(files);
    write(dir.path(), &all);
    dir
}

fn prepared_with(dir: &Path, set: &[&str], capabilities: &Capabilities) -> Prepared {
    let sources = ValueSources { set: set.iter().map(|s| s.to_string()).collect(), ..ValueSources::default() };
    let values: Values = sources.merge(&|_: &str| Err("no files".to_string())).unwrap();
    prepare(load(&dir.join("c")).unwrap(), &values, &ReleaseOptions::template_defaults(), capabilities).unwrap()
}

fn run(files: &[(&str, &str)], set: &[&str]) -> Result<BTreeMap<String, String>, TemplateError> {
    let dir = chart_dir(files);
    execute(&prepared_with(dir.path(), set, &Capabilities::helm_defaults(&[])), &EngineOptions::default())
}

#[test]
fn include_tpl_and_helpers_see_every_define_and_the_chart_data() {
    let out = run(
        &[
            ("c/values.yaml", "name: frontend\nport: 8080\ngreeting: \"hi {{ .Values.name }}\"\n"),
            ("c/templates/_helpers.tpl", "{{- define \"c.name\" -}}{{ .Values.name | trunc 5 }}{{- end -}}"),
            (
                "c/templates/cm.yaml",
                "name: {{ include \"c.name\" . | upper }}\nport: {{ .Values.port }}\ngreeting: {{ tpl .Values.greeting . }}\n\
                 missing: [{{ .Values.nothing }}]\ntemplate: {{ .Template.Name }} in {{ .Template.BasePath }}\n\
                 chart: {{ .Chart.Name }}-{{ .Chart.Version }} root={{ .Chart.IsRoot }}\nrelease: {{ .Release.Name }}/{{ .Release.Namespace }} {{ .Release.Revision }} {{ .Release.Service }}",
            ),
        ],
        &[],
    )
    .unwrap();
    assert_eq!(
        out["c/templates/cm.yaml"],
        "name: FRONT\nport: 8080\ngreeting: hi frontend\nmissing: []\ntemplate: c/templates/cm.yaml in c/templates\n\
         chart: c-0.1.0 root=true\nrelease: release-name/default 1 Helm"
    );
    assert!(!out.contains_key("c/templates/_helpers.tpl"), "partials are not output");
}

#[test]
fn files_and_capabilities_have_helms_methods() {
    let dir = chart_dir(&[
        ("c/files/a.txt", "line one\nline two\n"),
        ("c/files/b.conf", "b=1"),
        (
            "c/templates/cm.yaml",
            "get: {{ .Files.Get \"files/b.conf\" }}\nlines: {{ range .Files.Lines \"files/a.txt\" }}[{{ . }}]{{ end }}\n\
             bytes: {{ .Files.GetBytes \"files/b.conf\" | len }}\nglob: {{ range $path, $_ := .Files.Glob \"files/*.txt\" }}{{ $path }}{{ end }}\n\
             config:\n{{ (.Files.Glob \"files/b*\").AsConfig | indent 2 }}\nsecrets: {{ (.Files.Glob \"files/b*\").AsSecrets }}\n\
             kube: {{ .Capabilities.KubeVersion }} {{ .Capabilities.KubeVersion.Version }} {{ .Capabilities.KubeVersion.GitVersion }} {{ .Capabilities.KubeVersion.Major }}.{{ .Capabilities.KubeVersion.Minor }}\n\
             has: {{ .Capabilities.APIVersions.Has \"apps/v1\" }} {{ .Capabilities.APIVersions.Has \"example.com/v1\" }} {{ .Capabilities.APIVersions.Has \"helm.k8s.io/test\" }}\n\
             helm: {{ .Capabilities.HelmVersion.Version }}",
        ),
    ]);
    let capabilities =
        Capabilities::with_kube_version(KubeVersion::parse("v1.30.2-eks.1").unwrap(), &["helm.k8s.io/test".into()]);
    let out = execute(&prepared_with(dir.path(), &[], &capabilities), &EngineOptions::default()).unwrap();
    assert_eq!(
        out["c/templates/cm.yaml"],
        "get: b=1\nlines: [line one][line two]\nbytes: 3\nglob: files/a.txt\nconfig:\n  b.conf: b=1\nsecrets: b.conf: Yj0x\n\
         kube: v1.30.2 v1.30.2-eks.1 v1.30.2-eks.1 1.30\nhas: true false true\nhelm: v4.2"
    );
}

#[test]
fn values_keep_their_go_types_through_the_yaml_and_json_helpers() {
    let out = run(
        &[
            ("c/values.yaml", "replicas: 3\nratio: 0.5\nbig: 1000000\nlabels: {b: \"2\", a: x}\n"),
            (
                "c/templates/cm.yaml",
                "{{ .Values.replicas }} {{ .Values.big }} {{ .Values.set }} {{ typeOf .Values.replicas }} {{ typeOf .Values.set }}\n\
                 {{ toYaml .Values.labels }}\n{{ toJson .Values }}\n{{ (fromYaml \"a: 1\\nb: [x]\").b }} {{ (fromJson \"{\\\"n\\\": 2}\").n }}\n\
                 {{ toToml (dict \"k\" \"v\") }}{{ (fromYamlArray \"- 1\\n- two\") }} {{ fromJsonArray \"[1,2]\" }}",
            ),
        ],
        &["set=4"],
    )
    .unwrap();
    assert_eq!(
        out["c/templates/cm.yaml"],
        "3 1e+06 4 float64 int64\na: x\nb: \"2\"\n{\"big\":1000000,\"labels\":{\"a\":\"x\",\"b\":\"2\"},\"ratio\":0.5,\"replicas\":3,\"set\":4}\n\
         [x] 2\nk = \"v\"\n[1 two] [1 2]"
    );
}

#[test]
fn a_subcharts_values_are_its_parents_table() {
    let out = run(
        &[
            ("c/values.yaml", "sub:\n  name: from-parent\n"),
            ("c/charts/sub/Chart.yaml", "apiVersion: v2\nname: sub\nversion: 0.2.0\n"),
            ("c/charts/sub/values.yaml", "name: default\nport: 80\n"),
            ("c/charts/sub/templates/cm.yaml", "{{ .Values.name }} {{ .Values.port }} {{ .Values.shared }} {{ .Chart.IsRoot }}"),
            // Executed in Helm's order (deepest first, then names descending): `set` is seen
            // only by templates that run later.
            ("c/templates/b.yaml", "{{ $_ := set .Values.sub \"shared\" \"yes\" }}{{ .Subcharts.sub.Chart.Version }} {{ .Subcharts.sub.Values.port }}"),
            ("c/templates/a.yaml", "{{ .Values.sub.shared }}"),
        ],
        &[],
    )
    .unwrap();
    assert_eq!(out["c/charts/sub/templates/cm.yaml"], "from-parent 80  false");
    assert_eq!(out["c/templates/b.yaml"], "0.2.0 80");
    assert_eq!(out["c/templates/a.yaml"], "yes");
}

#[test]
fn the_same_tpl_text_again_sees_each_call_s_dot_and_the_set_it_is_called_in() {
    // Parsed once per set and reused: each call still executes with its own dot, and a tpl
    // inside tpl'd text (another set: the clone) sees that set's defines.
    let inner = "{{ define \\\"z\\\" }}Z{{ end }}{{ tpl \\\"{{ include \\\\\\\"z\\\\\\\" . }}{{ .n }}\\\" . }}";
    let template = format!(
        "{{{{ range list 1 2 3 }}}}[{{{{ tpl \"{{{{ .n }}}}\" (dict \"n\" .) }}}}]{{{{ end }}}}\
         {{{{ tpl \"{inner}\" (dict \"n\" 4) }}}}{{{{ tpl \"{inner}\" (dict \"n\" 5) }}}}"
    );
    let out = run(&[("c/templates/cm.yaml", template.as_str())], &[]).unwrap();
    assert_eq!(out["c/templates/cm.yaml"], "[1][2][3]Z4Z5");
}

#[test]
fn tpl_of_defines_only_renders_nothing_and_keeps_its_defines_to_itself() {
    let out = run(
        &[(
            "c/templates/cm.yaml",
            "[{{ tpl \"{{ define \\\"x\\\" }}X{{ end }}\" . }}][{{ tpl \"{{ define \\\"y\\\" }}Y{{ end }}{{ include \\\"y\\\" . }}\" . }}][{{ tpl \"\" . }}]",
        )],
        &[],
    )
    .unwrap();
    assert_eq!(out["c/templates/cm.yaml"], "[][Y][]");
}

#[test]
fn errors_name_the_file_line_column_and_value() {
    let helpers = (
        "c/templates/_helpers.tpl",
        "{{- define \"c.image\" -}}\n{{ required \"image.tag is required\" .tag }}\n{{- end -}}",
    );
    let deployment =
        ("c/templates/deployment.yaml", "kind: Deployment\nimage: {{ include \"c.image\" .Values.image }}\n");
    let error = run(&[("c/values.yaml", "image: {repository: nginx}\n"), helpers, deployment], &[]).unwrap_err();
    assert_eq!(
        error.to_string(),
        "execution error at (c/templates/_helpers.tpl:2:3): image.tag is required\n  included from c/templates/deployment.yaml:2:10\n  value: .Values.image"
    );
    let error = run(&[("c/templates/pod.yaml", "a: 1\nname: {{ .Values.image.tag }}\n")], &[]).unwrap_err();
    assert_eq!(
        error.to_string(),
        "c/templates/pod.yaml:2:16\n  executing \"c/templates/pod.yaml\" at <.Values.image.tag>:\n    nil pointer evaluating interface {}.tag\n  value: .Values.image.tag"
    );
    let error = run(&[("c/templates/pod.yaml", "a: 1\nname: {{ .Values.x }\n")], &[]).unwrap_err();
    assert_eq!(error.to_string(), "parse error at (c/templates/pod.yaml:2): unexpected \"}\" in operand");
    let error = run(&[("c/templates/pod.yaml", "{{ fail \"no way\" }}")], &[]).unwrap_err();
    assert_eq!(error.to_string(), "execution error at (c/templates/pod.yaml:1:3): no way");
    let error = run(&[("c/templates/pod.yaml", "{{ tpl \"{{ .x.y }}\" .Values }}")], &[]).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("gotpl:1:5\n  executing \"gotpl\" at <.x.y>:\n    nil pointer evaluating interface {}.y"),
        "{error}"
    );
}

#[test]
fn include_recursion_stops_at_helms_limit() {
    let error = run(
        &[
            ("c/templates/_loop.tpl", "{{ define \"loop\" }}{{ include \"loop\" . }}{{ end }}"),
            ("c/templates/cm.yaml", "{{ include \"loop\" . }}"),
        ],
        &[],
    )
    .unwrap_err();
    let TemplateError::Exec { frames, .. } = &error else { panic!("{error}") };
    assert!(
        frames
            .last()
            .unwrap()
            .reason
            .ends_with("rendering template has a nested reference name: loop: unable to execute template"),
        "{:?}",
        frames.last()
    );
}

#[test]
fn strict_makes_a_missing_key_an_error() {
    let dir = chart_dir(&[("c/templates/cm.yaml", "{{ .Values.nothing }}")]);
    let prepared = prepared_with(dir.path(), &[], &Capabilities::helm_defaults(&[]));
    let error = execute(&prepared, &EngineOptions { strict: true, ..EngineOptions::default() }).unwrap_err();
    assert!(error.to_string().contains("map has no entry for key \"nothing\""), "{error}");
}

struct Cluster;

impl Lookup for Cluster {
    fn lookup(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<serde_json::Value>, String> {
        match (api_version, kind, namespace, name) {
            ("v1", "Secret", "default", "db") => Ok(Some(json!({"data": {"password": "c2VjcmV0"}}))),
            ("v1", "Secret", _, _) => Ok(None),
            _ => Err(format!("no kind {kind} in {api_version}")),
        }
    }
}

#[test]
fn lookup_reads_through_the_callers_cluster_and_finds_nothing_without_one() {
    let template = "[{{ with lookup \"v1\" \"Secret\" \"default\" \"db\" }}{{ .data.password }}{{ end }}][{{ lookup \"v1\" \"Secret\" \"default\" \"none\" | len }}]";
    let dir = chart_dir(&[("c/templates/cm.yaml", template)]);
    let prepared = prepared_with(dir.path(), &[], &Capabilities::helm_defaults(&[]));
    let offline = execute(&prepared, &EngineOptions::default()).unwrap();
    assert_eq!(offline["c/templates/cm.yaml"], "[][0]");
    let options = EngineOptions { lookup: Some(Arc::new(Cluster)), ..EngineOptions::default() };
    assert_eq!(execute(&prepared, &options).unwrap()["c/templates/cm.yaml"], "[c2VjcmV0][0]");
    let dir = chart_dir(&[("c/templates/cm.yaml", "{{ lookup \"x/v1\" \"Thing\" \"\" \"\" }}")]);
    let prepared = prepared_with(dir.path(), &[], &Capabilities::helm_defaults(&[]));
    let error = execute(&prepared, &options).unwrap_err();
    assert!(error.to_string().contains("error calling lookup: no kind Thing in x/v1"), "{error}");
}

#[test]
fn name_templates_render_with_sprig() {
    assert_eq!(name_template("foobar-{{ b64enc \"abc\" | lower }}-baz").unwrap(), "foobar-ywjj-baz");
}
