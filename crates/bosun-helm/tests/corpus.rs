//! Conformance with Helm's own test charts and `helm template` golden files, read from the
//! shared corpus (`<workspace>/../shared/reference/corpora/helm`, Helm's `pkg/cmd/testdata`;
//! the nearest `shared/` above the crate, so that a worktree nested one level deeper finds
//! it too): every test chart loads or is refused as Helm refuses it, and the
//! golden outputs are reproduced where no template engine is needed (static templates, or
//! the rendered text taken back out of the golden file and assembled again).

use bosun_helm::chart::Chart;
use bosun_helm::load::{LoadError, load};
use bosun_helm::manifest::{AssembleOptions, PrintOptions, assemble, print, show_only};
use bosun_helm::release::{Capabilities, KubeVersion, ReleaseOptions};
use bosun_helm::render::{PrepareError, Prepared, prepare};
use bosun_helm::values::{ValueSources, Values, path_value};
use bosun_helm::yaml::to_yaml;
use std::collections::BTreeMap;
use std::path::PathBuf;

use bosun_test_tools::helm_testdata as testdata;

fn chart(name: &str) -> Chart {
    load(&testdata().join("testcharts").join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn golden(name: &str) -> String {
    std::fs::read_to_string(testdata().join("output").join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Helm's test capabilities: Kubernetes v1.20.0, as the golden files show.
fn test_capabilities(extra_api_versions: &[&str]) -> Capabilities {
    let extra: Vec<String> = extra_api_versions.iter().map(|v| v.to_string()).collect();
    Capabilities::with_kube_version(KubeVersion::parse("v1.20.0").unwrap(), &extra)
}

fn user_values(sources: ValueSources) -> Values {
    sources.merge(&|name: &str| std::fs::read_to_string(name).map_err(|e| e.to_string())).unwrap()
}

fn prepared(name: &str, sources: ValueSources) -> Result<Prepared, PrepareError> {
    prepare(chart(name), &user_values(sources), &ReleaseOptions::template_defaults(), &test_capabilities(&[]))
}

/// What `helm template` does with each test chart: loads it, or refuses it with Helm's
/// reason (worded by this crate).
#[test]
fn every_test_chart_loads_or_is_refused_as_helm_does() {
    if bosun_test_tools::skip_without_helm_corpus("every_test_chart_loads_or_is_refused_as_helm_does") {
        return;
    }
    let refused: BTreeMap<&str, &str> = [
        ("chart-bad-requirements", "chart-bad-requirements/Chart.yaml: error converting YAML to JSON: yaml: line"),
        ("chart-bad-type", "field 'type': must be application or library, not \"foobar\""),
        (
            "chart-with-bad-subcharts",
            "error unpacking subchart bad-subchart in chart-with-bad-subcharts: chart-with-bad-subcharts/charts/bad-subchart/Chart.yaml: field 'name': is required",
        ),
        ("lib-chart", "field 'type': must be application or library, not \"Library\""),
        ("upgradetest", "unable to detect chart at"),
        ("signtest-0.1.0.tgz.prov", "does not appear to be a gzipped archive"),
    ]
    .into_iter()
    .collect();
    let mut seen = 0;
    for entry in std::fs::read_dir(testdata().join("testcharts")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        seen += 1;
        match (load(&path), refused.get(name.as_str())) {
            (Ok(chart), None) => assert!(!chart.name().is_empty(), "{name}"),
            (Err(error), Some(want)) => assert!(error.to_string().contains(want), "{name}: {error}"),
            (Ok(_), Some(want)) => panic!("{name} loaded; Helm refuses it: {want}"),
            (Err(error), None) => panic!("{name} was refused: {error}"),
        }
    }
    assert!(seen >= 44, "the corpus has its charts ({seen})");
}

#[test]
fn archives_load_with_their_subcharts() {
    if bosun_test_tools::skip_without_helm_corpus("archives_load_with_their_subcharts") {
        return;
    }
    let reqtest = chart("reqtest-0.1.0.tgz");
    let mut names: Vec<&str> = reqtest.dependencies.iter().map(Chart::name).collect();
    names.sort();
    assert_eq!(names, ["reqsubchart", "reqsubchart2", "reqsubchart3"]);
    assert_eq!(chart("compressedchart-0.1.0.tar.gz").templates[0].name, "templates/template.tpl");
    assert_eq!(chart("pre-release-chart-0.1.0-alpha.tgz").metadata.version, "0.1.0-alpha");
    let lib_archive = chart("chart-with-template-lib-archive-dep");
    assert_eq!(lib_archive.dependencies[0].name(), "common");
    assert!(lib_archive.dependencies[0].templates.iter().any(|t| t.name == "templates/_chartref.tpl"));
}

#[test]
fn v1_charts_read_requirements() {
    if bosun_test_tools::skip_without_helm_corpus("v1_charts_read_requirements") {
        return;
    }
    let c = chart("issue-7233");
    assert_eq!(c.metadata.dependencies[0].name, "alpine");
    assert_eq!(c.metadata.dependencies[0].repository, "file://../alpine");
    assert!(c.lock.as_ref().is_some_and(|l| l.digest.starts_with("sha256:")));
    assert!(c.files.iter().any(|f| f.name == "requirements.yaml"), "a v1 chart's requirements are also files");
}

/// `helm template` refuses library charts and charts with missing dependencies.
#[test]
fn install_checks_as_helm() {
    if bosun_test_tools::skip_without_helm_corpus("install_checks_as_helm") {
        return;
    }
    let mut library = chart("chart-with-only-crds");
    library.metadata.chart_type = "library".into();
    let error =
        prepare(library, &Values::new(), &ReleaseOptions::template_defaults(), &test_capabilities(&[])).unwrap_err();
    assert_eq!(error.to_string(), "crd-test: library charts are not installable");
    let error = prepared("chart-missing-deps", ValueSources::default()).unwrap_err();
    assert!(
        error.to_string().starts_with(
            "chart \"reqsubchart2\" 0.2.0 (repository https://example.com/charts) is missing from charts/"
        ),
        "{error}"
    );
}

/// The schema golden files: the message after Helm's `Error: INSTALLATION FAILED: `.
#[test]
fn schema_errors_match_helms_golden_files() {
    if bosun_test_tools::skip_without_helm_corpus("schema_errors_match_helms_golden_files") {
        return;
    }
    let set = |values: &[&str]| ValueSources {
        set: values.iter().map(|v| v.to_string()).collect(),
        ..ValueSources::default()
    };
    let extra = testdata().join("testcharts/chart-with-schema/extra-values.yaml");
    let file = ValueSources {
        files: vec![("extra-values.yaml".into(), std::fs::read_to_string(extra).unwrap())],
        ..ValueSources::default()
    };
    let cases = [
        ("chart-with-schema-negative", ValueSources::default(), "schema-negative.txt"),
        ("chart-with-schema", file, "schema-negative.txt"),
        ("chart-with-schema", set(&["age=-5"]), "schema-negative-cli.txt"),
        ("chart-with-schema-and-subchart", ValueSources::default(), "subchart-schema-negative.txt"),
        (
            "chart-with-schema-and-subchart",
            set(&["lastname=doe", "subchart-with-schema.age=-25"]),
            "subchart-schema-cli-negative.txt",
        ),
    ];
    for (name, sources, output) in cases {
        let error = prepared(name, sources).unwrap_err();
        let want = golden(output);
        let want = want.strip_prefix("Error: INSTALLATION FAILED: ").unwrap();
        assert_eq!(format!("{error}\n"), want, "{name} {output}");
    }
    assert!(prepared("chart-with-schema", ValueSources::default()).is_ok());
    assert!(prepared("chart-with-schema-and-subchart", set(&["lastname=doe", "subchart-with-schema.age=25"])).is_ok());
}

/// The documents of a golden file: (source, text as rendered).
fn documents(text: &str) -> Vec<(String, String)> {
    let mut documents = Vec::new();
    for chunk in text.split("---\n# Source: ").skip(1) {
        let (source, body) = chunk.split_once('\n').unwrap();
        documents.push((source.to_string(), body.strip_suffix('\n').unwrap_or(body).to_string()));
    }
    documents
}

/// The rendered text of each template, rebuilt from a golden file's documents.
fn rendered_from(documents: &[(String, String)]) -> BTreeMap<String, String> {
    let mut rendered: BTreeMap<String, String> = BTreeMap::new();
    for (source, text) in documents.iter().filter(|(source, _)| !source.contains("/crds/")) {
        let entry = rendered.entry(source.clone()).or_default();
        if !entry.is_empty() {
            entry.push_str(if entry.ends_with('\n') { "---\n" } else { "\n---\n" });
        }
        entry.push_str(text);
    }
    rendered
}

fn assemble_and_print(prepared: &Prepared, rendered: &BTreeMap<String, String>, options: PrintOptions) -> String {
    print(&assemble(&prepared.chart, rendered, AssembleOptions::default()).unwrap(), options)
}

/// The golden files of `template_test.go`: every document's template is one Helm names for
/// this chart and these values, and assembling the rendered text again prints the golden
/// file byte for byte (order, hooks last, `--include-crds`, `--skip-tests`).
#[test]
fn template_golden_files_round_trip() {
    if bosun_test_tools::skip_without_helm_corpus("template_golden_files_round_trip") {
        return;
    }
    let subchart_dir = testdata().join("testcharts/subchart");
    let set = |values: &[&str]| ValueSources {
        set: values.iter().map(|v| v.to_string()).collect(),
        ..ValueSources::default()
    };
    let values_file = |path: PathBuf| ValueSources {
        files: vec![(path.display().to_string(), std::fs::read_to_string(&path).unwrap())],
        ..ValueSources::default()
    };
    let cases = [
        ("subchart", ValueSources::default(), "template.txt", PrintOptions::default()),
        ("subchart", set(&["service.name=apache"]), "template-set.txt", PrintOptions::default()),
        (
            "subchart",
            values_file(subchart_dir.join("charts/subchartA/values.yaml")),
            "template-values-files.txt",
            PrintOptions::default(),
        ),
        ("subchart", ValueSources::default(), "template-name-template.txt", PrintOptions::default()),
        ("subchart", ValueSources::default(), "template-with-kube-version.txt", PrintOptions::default()),
        ("subchart", ValueSources::default(), "template-with-api-version.txt", PrintOptions::default()),
        (
            "subchart",
            ValueSources::default(),
            "template-with-crds.txt",
            PrintOptions { include_crds: true, ..PrintOptions::default() },
        ),
        (
            "subchart",
            ValueSources::default(),
            "template-skip-tests.txt",
            PrintOptions { skip_tests: true, ..PrintOptions::default() },
        ),
        (
            "subchart",
            set(&["configmap.enabled=true", "subchartb.enabled=true"]),
            "template-subchart-cm.txt",
            PrintOptions::default(),
        ),
        (
            "subchart",
            set(&["configmap.enabled=true", "subchartb.enabled=true", "configmap.value=baz"]),
            "template-subchart-cm-set.txt",
            PrintOptions::default(),
        ),
        (
            "subchart",
            values_file(subchart_dir.join("extra_values.yaml")),
            "template-subchart-cm-set-file.txt",
            PrintOptions::default(),
        ),
        ("issue-9027", ValueSources::default(), "issue-9027.txt", PrintOptions::default()),
        ("object-order", ValueSources::default(), "object-order.txt", PrintOptions::default()),
        (
            "chart-with-template-lib-dep",
            ValueSources::default(),
            "template-chart-with-template-lib-dep.txt",
            PrintOptions::default(),
        ),
        (
            "chart-with-template-lib-archive-dep",
            ValueSources::default(),
            "template-chart-with-template-lib-archive-dep.txt",
            PrintOptions::default(),
        ),
    ];
    for (name, sources, output, options) in cases {
        let prepared = prepared(name, sources).unwrap_or_else(|e| panic!("{output}: {e}"));
        let want = golden(output);
        let documents = documents(&want);
        for (source, _) in &documents {
            let known = prepared.templates.iter().any(|t| &t.name == source && !t.partial)
                || prepared.chart.crd_objects(prepared.chart.name()).iter().any(|c| &c.filename == source);
            assert!(known, "{output}: {source} is a template of the prepared chart");
        }
        assert_eq!(assemble_and_print(&prepared, &rendered_from(&documents), options), want, "{output}");
    }
}

/// `object-order`'s templates have no actions: their text is their output, and Helm's
/// install order gives the golden file.
#[test]
fn object_order_from_the_templates_themselves() {
    if bosun_test_tools::skip_without_helm_corpus("object_order_from_the_templates_themselves") {
        return;
    }
    let prepared = prepared("object-order", ValueSources::default()).unwrap();
    let rendered: BTreeMap<String, String> =
        prepared.templates.iter().map(|t| (t.name.clone(), t.text.clone())).collect();
    assert_eq!(assemble_and_print(&prepared, &rendered, PrintOptions::default()), golden("object-order.txt"));
}

/// The document of a golden file whose source is `source`.
fn document<'a>(documents: &'a [(String, String)], source: &str) -> &'a str {
    &documents.iter().find(|(s, _)| s == source).unwrap_or_else(|| panic!("{source}")).1
}

/// issue-9027's templates print `{{ .Values | toYaml }}`: coalescing (nulls in the parent's
/// values for the subchart, globals) and `toYaml` together give the golden text.
#[test]
fn issue_9027_values_print_as_helm() {
    if bosun_test_tools::skip_without_helm_corpus("issue_9027_values_print_as_helm") {
        return;
    }
    let prepared = prepared("issue-9027", ValueSources::default()).unwrap();
    let want = golden("issue-9027.txt");
    let documents = documents(&want);
    let scope_values = |path: &str| {
        let scope = prepared.scopes.iter().find(|s| s.path == path).unwrap();
        format!("{}\n", to_yaml(&scope.values))
    };
    assert_eq!(scope_values("issue-9027"), format!("{}\n", document(&documents, "issue-9027/templates/values.yaml")));
    assert_eq!(
        scope_values("issue-9027/charts/subchart"),
        document(&documents, "issue-9027/charts/subchart/templates/values.yaml")
    );
}

/// `configmap.value` as the subchart chart's configmap prints it: the parent's values win
/// over values imported from subchartb, the user's over both.
#[test]
fn imported_values_lose_to_parent_and_user_values() {
    if bosun_test_tools::skip_without_helm_corpus("imported_values_lose_to_parent_and_user_values") {
        return;
    }
    let set = |values: &[&str]| ValueSources {
        set: values.iter().map(|v| v.to_string()).collect(),
        ..ValueSources::default()
    };
    let extra = testdata().join("testcharts/subchart/extra_values.yaml");
    let cases = [
        (set(&["configmap.enabled=true", "subchartb.enabled=true"]), "template-subchart-cm.txt"),
        (
            set(&["configmap.enabled=true", "subchartb.enabled=true", "configmap.value=baz"]),
            "template-subchart-cm-set.txt",
        ),
        (
            ValueSources {
                files: vec![("extra_values.yaml".into(), std::fs::read_to_string(extra).unwrap())],
                ..ValueSources::default()
            },
            "template-subchart-cm-set-file.txt",
        ),
    ];
    for (sources, output) in cases {
        let prepared = prepared("subchart", sources).unwrap();
        let want = golden(output);
        let documents = documents(&want);
        let configmap = document(&documents, "subchart/templates/subdir/configmap.yaml");
        let printed = configmap.lines().find_map(|l| l.strip_prefix("  value: ")).unwrap();
        assert_eq!(path_value(&prepared.values, "configmap.value").and_then(|v| v.as_str()), Some(printed), "{output}");
    }
}

/// The `subchart` chart's templates get Helm's names (the alias-free dependency names, not
/// the directory names) and scopes.
#[test]
fn templates_are_named_and_scoped_as_helm() {
    if bosun_test_tools::skip_without_helm_corpus("templates_are_named_and_scoped_as_helm") {
        return;
    }
    let prepared = prepared("subchart", ValueSources::default()).unwrap();
    let names: Vec<&str> = prepared.templates.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "subchart/charts/subchartb/templates/service.yaml",
            "subchart/charts/subcharta/templates/service.yaml",
            "subchart/templates/tests/test-nothing.yaml",
            "subchart/templates/tests/test-config.yaml",
            "subchart/templates/subdir/serviceaccount.yaml",
            "subchart/templates/subdir/rolebinding.yaml",
            "subchart/templates/subdir/role.yaml",
            "subchart/templates/subdir/configmap.yaml",
            "subchart/templates/service.yaml",
            "subchart/templates/NOTES.txt",
        ]
    );
    let service =
        prepared.templates.iter().find(|t| t.name == "subchart/charts/subcharta/templates/service.yaml").unwrap();
    let data = prepared.data(service);
    assert_eq!(data["Chart"]["Name"], "subcharta");
    assert_eq!(data["Chart"]["IsRoot"], false);
    assert_eq!(data["Values"]["service"]["name"], "apache");
    assert_eq!(data["Template"]["BasePath"], "subchart/charts/subcharta/templates");
    assert_eq!(data["Release"]["Name"], "release-name");
    assert_eq!(data["Capabilities"]["KubeVersion"]["Minor"], "20");
    let root = prepared.templates.iter().find(|t| t.name == "subchart/templates/service.yaml").unwrap();
    assert_eq!(prepared.data(root)["Subcharts"]["subcharta"]["Chart"]["Name"], "subcharta");
    assert!(matches!(load(&testdata().join("testcharts/nothing")), Err(LoadError::Io { .. })));
}

/// `--show-only`, from `template.txt`'s output.
#[test]
fn show_only_matches_helms_golden_files() {
    if bosun_test_tools::skip_without_helm_corpus("show_only_matches_helms_golden_files") {
        return;
    }
    let printed = golden("template.txt");
    let cases: &[(&[&str], &str)] = &[
        (&["templates/service.yaml"], "template-show-only-one.txt"),
        (&["templates/service.yaml", "charts/subcharta/templates/service.yaml"], "template-show-only-multiple.txt"),
        (&["templates/subdir/role*"], "template-show-only-glob.txt"),
    ];
    for (patterns, output) in cases {
        assert_eq!(show_only(&printed, patterns).unwrap(), golden(output), "{output}");
    }
    assert_eq!(
        show_only(&printed, &["templates/none.yaml"]).unwrap_err().to_string(),
        "could not find template templates/none.yaml in chart"
    );
}
