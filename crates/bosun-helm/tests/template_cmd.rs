//! Conformance with `helm template`: every case of Helm's `TestTemplateCmd`
//! (`pkg/cmd/template_test.go`: a chart, flags, and the golden file of what Helm printed),
//! read from the shared corpus (`<workspace>/../shared/reference/corpora/helm`, Apache-2.0,
//! not copied here), run through bosun-helm from loading to printing.
//!
//! A rendering case passes when the documents are the same objects from the same templates in
//! the same order, and the printed text is Helm's byte for byte. A case where Helm refuses
//! the chart passes when bosun refuses it for the same cause; the wording is compared where
//! bosun keeps Helm's. The table below says what each case gives; the test fails when a case
//! does better or worse than it says, so `docs/helm.md`, which copies the figures, stays true.

use std::collections::BTreeMap;
use std::path::Path;

use bosun_helm::engine::{self, EngineError, EngineOptions, TemplateError};
use bosun_helm::load::{LoadError, load};
use bosun_helm::manifest::{AssembleOptions, ManifestError, PrintOptions, print, show_only};
use bosun_helm::release::{Capabilities, KubeVersion, ReleaseOptions};
use bosun_helm::render::prepare;
use bosun_helm::values::ValueSources;
use bosun_helm::yaml;

use bosun_test_tools::helm_testdata as testdata;

/// What a case gives under bosun.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// The same objects, and Helm's text byte for byte.
    Same,
    /// Refused, and the message is Helm's.
    RefusedAlike,
    /// Refused for the same cause, in bosun's words.
    RefusedReworded,
    /// Not reproduced: see the reason in the table.
    NotPassed,
}

struct Case {
    name: &'static str,
    /// `helm template`'s arguments, paths relative to Helm's `testdata`.
    args: &'static [&'static str],
    golden: &'static str,
    outcome: Outcome,
    /// Why the outcome is what it is, when it is not `Same`.
    note: &'static str,
}

const SUBCHART: &str = "testcharts/subchart";

/// `TestTemplateCmd`'s table, in its order.
const CASES: &[Case] = &[
    Case { name: "check name", args: &[SUBCHART], golden: "output/template.txt", outcome: Outcome::Same, note: "" },
    Case {
        name: "check set name",
        args: &[SUBCHART, "--set", "service.name=apache"],
        golden: "output/template-set.txt",
        outcome: Outcome::Same,
        note: "",
    },
    Case {
        name: "check values files",
        args: &[SUBCHART, "--values", "testcharts/subchart/charts/subchartA/values.yaml"],
        golden: "output/template-values-files.txt",
        outcome: Outcome::Same,
        note: "",
    },
    Case {
        name: "check name template",
        args: &[SUBCHART, "--name-template", "foobar-{{ b64enc \"abc\" | lower }}-baz"],
        golden: "output/template-name-template.txt",
        outcome: Outcome::Same,
        note: "",
    },
    Case {
        name: "check no args",
        args: &[],
        golden: "output/template-no-args.txt",
        outcome: Outcome::NotPassed,
        note: "argument checking of Helm's CLI, not rendering: bosun's CLI (clap) refuses a missing DIR in its own words",
    },
    Case {
        name: "check library chart",
        args: &["testcharts/lib-chart"],
        golden: "output/template-lib-chart.txt",
        outcome: Outcome::RefusedReworded,
        note: "refused when loading (`type: Library` is not a chart type); bosun names the field and the value",
    },
    Case {
        name: "check chart bad type",
        args: &["testcharts/chart-bad-type"],
        golden: "output/template-chart-bad-type.txt",
        outcome: Outcome::RefusedReworded,
        note: "refused when loading; bosun names the field and the value",
    },
    Case {
        name: "check chart with dependency which is an app chart acting as a library chart",
        args: &["testcharts/chart-with-template-lib-dep"],
        golden: "output/template-chart-with-template-lib-dep.txt",
        outcome: Outcome::Same,
        note: "",
    },
    Case {
        name: "check chart with dependency which is an app chart archive acting as a library chart",
        args: &["testcharts/chart-with-template-lib-archive-dep"],
        golden: "output/template-chart-with-template-lib-archive-dep.txt",
        outcome: Outcome::Same,
        note: "",
    },
    Case {
        name: "check kube version",
        args: &["--kube-version", "1.16.0", SUBCHART],
        golden: "output/template-with-kube-version.txt",
        outcome: Outcome::Same,
        note: "",
    },
    Case {
        name: "check kube api versions",
        args: &["--api-versions", "helm.k8s.io/test,helm.k8s.io/test2", SUBCHART],
        golden: "output/template-with-api-version.txt",
        outcome: Outcome::Same,
        note: "",
    },
    Case {
        name: "check kube api versions (repeated flag)",
        args: &["--api-versions", "helm.k8s.io/test", "--api-versions", "helm.k8s.io/test2", SUBCHART],
        golden: "output/template-with-api-version.txt",
        outcome: Outcome::Same,
        note: "",
    },
    Case {
        name: "template with CRDs",
        args: &[SUBCHART, "--include-crds"],
        golden: "output/template-with-crds.txt",
        outcome: Outcome::Same,
        note: "",
    },
    Case {
        name: "template with show-only one",
        args: &[SUBCHART, "--show-only", "templates/service.yaml"],
        golden: "output/template-show-only-one.txt",
        outcome: Outcome::Same,
        note: "",
    },
    Case {
        name: "template with show-only multiple",
        args: &[
            SUBCHART,
            "--show-only",
            "templates/service.yaml",
            "--show-only",
            "charts/subcharta/templates/service.yaml",
        ],
        golden: "output/template-show-only-multiple.txt",
        outcome: Outcome::Same,
        note: "",
    },
    Case {
        name: "template with show-only glob",
        args: &[SUBCHART, "--show-only", "templates/subdir/role*"],
        golden: "output/template-show-only-glob.txt",
        outcome: Outcome::Same,
        note: "",
    },
    Case {
        name: "sorted output of manifests",
        args: &["testcharts/object-order"],
        golden: "output/object-order.txt",
        outcome: Outcome::Same,
        note: "",
    },
    Case {
        name: "chart with template with invalid yaml",
        args: &["testcharts/chart-with-template-with-invalid-yaml"],
        golden: "output/template-with-invalid-yaml.txt",
        outcome: Outcome::RefusedReworded,
        note: "refused as not YAML, naming the template; bosun adds the document's index, and its YAML reader words the fault differently and places it on the offending line (`line 10: simple key expected ':'` where go-yaml says `line 11: could not find expected ':'`)",
    },
    Case {
        name: "chart with template with invalid yaml (--debug)",
        args: &["testcharts/chart-with-template-with-invalid-yaml", "--debug"],
        golden: "output/template-with-invalid-yaml-debug.txt",
        outcome: Outcome::NotPassed,
        note: "`--debug` prints the rendered manifests before the error; bosun has no such flag and prints only the error",
    },
    Case {
        name: "chart with template with invalid template expression (--debug, --show-only)",
        args: &[
            "testcharts/chart-with-template-with-invalid-template-expr",
            "--debug",
            "--show-only",
            "templates/alpine-pod.yaml",
        ],
        golden: "output/template-with-invalid-template-expr-debug-show-only.txt",
        outcome: Outcome::RefusedAlike,
        note: "Helm's message, then a line naming the value the failing action reads (`value: .Values.nonExistentKey`)",
    },
    Case {
        name: "template skip-tests",
        args: &[SUBCHART, "--skip-tests"],
        golden: "output/template-skip-tests.txt",
        outcome: Outcome::Same,
        note: "",
    },
    Case {
        name: "ensure nil/null values pass to subcharts delete values",
        args: &["testcharts/issue-9027"],
        golden: "output/issue-9027.txt",
        outcome: Outcome::Same,
        note: "",
    },
    Case {
        name: "template with imported subchart values ensuring import",
        args: &[SUBCHART, "--set", "configmap.enabled=true", "--set", "subchartb.enabled=true"],
        golden: "output/template-subchart-cm.txt",
        outcome: Outcome::Same,
        note: "",
    },
    Case {
        name: "template with imported subchart values set with --set",
        args: &[
            SUBCHART,
            "--set",
            "configmap.enabled=true",
            "--set",
            "subchartb.enabled=true",
            "--set",
            "configmap.value=baz",
        ],
        golden: "output/template-subchart-cm-set.txt",
        outcome: Outcome::Same,
        note: "",
    },
    Case {
        name: "template with imported subchart values set with a values file",
        args: &[SUBCHART, "-f", "testcharts/subchart/extra_values.yaml"],
        golden: "output/template-subchart-cm-set-file.txt",
        outcome: Outcome::Same,
        note: "",
    },
];

/// Why a run stopped, by stage.
#[derive(Debug)]
enum Refusal {
    NoChart,
    Load(LoadError),
    Prepare(bosun_helm::render::PrepareError),
    Template(TemplateError),
    Manifest(ManifestError),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::NoChart => f.write_str("no chart given"),
            Refusal::Load(e) => write!(f, "{e}"),
            Refusal::Prepare(e) => write!(f, "{e}"),
            Refusal::Template(e) => write!(f, "{e}"),
            Refusal::Manifest(e) => write!(f, "{e}"),
        }
    }
}

/// `helm template` with Helm's test settings (Kubernetes v1.20.0), on bosun-helm.
fn helm_template(args: &[&str], testdata: &Path) -> Result<String, Refusal> {
    let mut chart_path = None;
    let mut sources = ValueSources::default();
    let mut release = ReleaseOptions::template_defaults();
    let mut kube_version = KubeVersion::parse("v1.20.0").unwrap();
    let mut api_versions = Vec::new();
    let mut print_options = PrintOptions::default();
    let mut show = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut value = || args.next().expect("flag value").to_string();
        match *arg {
            "--set" => sources.set.push(value()),
            "--values" | "-f" => {
                let file = value();
                let text = std::fs::read_to_string(testdata.join(&file)).unwrap();
                sources.files.push((file, text));
            }
            "--name-template" => release.name = engine::name_template(&value()).unwrap(),
            "--kube-version" => kube_version = KubeVersion::parse(&value()).unwrap(),
            "--api-versions" => api_versions.extend(value().split(',').map(str::to_string)),
            "--include-crds" => print_options.include_crds = true,
            "--skip-tests" => print_options.skip_tests = true,
            "--show-only" => show.push(value()),
            // Helm prints the rendered text before a YAML error; bosun has no such mode.
            "--debug" => {}
            chart => chart_path = Some(testdata.join(chart)),
        }
    }
    let chart = load(&chart_path.ok_or(Refusal::NoChart)?).map_err(Refusal::Load)?;
    let values = sources.merge(&|name: &str| std::fs::read_to_string(name).map_err(|e| e.to_string())).unwrap();
    let capabilities = Capabilities::with_kube_version(kube_version, &api_versions);
    let prepared = prepare(chart, &values, &release, &capabilities).map_err(Refusal::Prepare)?;
    let rendered =
        engine::render(&prepared, &EngineOptions::default(), AssembleOptions::default()).map_err(|e| match e {
            EngineError::Template(e) => Refusal::Template(e),
            EngineError::Manifest(e) => Refusal::Manifest(e),
        })?;
    let printed = print(&rendered, print_options);
    if show.is_empty() {
        return Ok(printed);
    }
    let patterns: Vec<&str> = show.iter().map(String::as_str).collect();
    show_only(&printed, &patterns).map_err(Refusal::Manifest)
}

/// The documents of printed output: (source, object).
fn objects(printed: &str) -> Vec<(String, serde_json::Value)> {
    printed
        .split("---\n# Source: ")
        .skip(1)
        .map(|chunk| {
            let (source, body) = chunk.split_once('\n').unwrap();
            (source.to_string(), yaml::parse_object(body).unwrap_or_else(|e| panic!("{source}: {e}")))
        })
        .collect()
}

/// Whether bosun refused at the stage where Helm did, for the same cause.
fn same_cause(case: &Case, refusal: &Refusal) -> bool {
    match case.golden {
        "output/template-lib-chart.txt" | "output/template-chart-bad-type.txt" => {
            matches!(refusal, Refusal::Load(LoadError::Chart(_)))
        }
        "output/template-with-invalid-yaml.txt" => matches!(
            refusal,
            Refusal::Manifest(ManifestError::Parse { source_file, .. })
                if source_file == "chart-with-template-with-invalid-yaml/templates/alpine-pod.yaml"
        ),
        "output/template-with-invalid-template-expr-debug-show-only.txt" => {
            matches!(refusal, Refusal::Template(TemplateError::Exec { .. }))
        }
        _ => false,
    }
}

fn run(case: &Case, testdata: &Path) -> (Outcome, String) {
    let golden = std::fs::read_to_string(testdata.join(case.golden)).unwrap();
    match helm_template(case.args, testdata) {
        Ok(_) if golden.starts_with("Error: ") => (Outcome::NotPassed, format!("rendered; Helm refused: {golden}")),
        Ok(printed) => {
            let (got, want) = (objects(&printed), objects(&golden));
            if got != want {
                let sources =
                    |docs: &[(String, serde_json::Value)]| docs.iter().map(|d| d.0.clone()).collect::<Vec<_>>();
                return (
                    Outcome::NotPassed,
                    format!("objects differ: {:?} vs Helm's {:?}", sources(&got), sources(&want)),
                );
            }
            if printed != golden {
                return (Outcome::NotPassed, format!("same objects, text differs:\n{printed}\nHelm:\n{golden}"));
            }
            (Outcome::Same, String::new())
        }
        Err(refusal) => {
            let message = refusal.to_string();
            let helm = golden.lines().find_map(|l| l.strip_prefix("Error: ")).map(|first| {
                let rest: Vec<&str> = golden.lines().skip_while(|l| !l.starts_with("Error: ")).skip(1).collect();
                let rest: Vec<&str> = rest.into_iter().take_while(|l| !l.is_empty()).collect();
                std::iter::once(first).chain(rest).collect::<Vec<_>>().join("\n")
            });
            match helm {
                Some(helm) if message == helm || message.starts_with(&format!("{helm}\n")) => {
                    (Outcome::RefusedAlike, message)
                }
                Some(_) if same_cause(case, &refusal) => (Outcome::RefusedReworded, message),
                _ => (Outcome::NotPassed, message),
            }
        }
    }
}

/// The golden files `TestTemplateCmd` names, in order, read from `template_test.go`.
fn goldens_of_template_cmd() -> Vec<String> {
    let source = std::fs::read_to_string(testdata().join("../template_test.go")).unwrap();
    let start = source.find("func TestTemplateCmd(").unwrap();
    let end = source[start..].find("\nfunc ").map_or(source.len(), |i| start + i);
    source[start..end]
        .lines()
        .filter_map(|line| line.trim().strip_prefix("golden:"))
        .map(|rest| rest.trim().trim_end_matches(',').trim_matches('"').to_string())
        .collect()
}

#[test]
fn every_template_case_of_helm_runs_through_bosun() {
    if bosun_test_tools::skip_without_helm_corpus("every_template_case_of_helm_runs_through_bosun") {
        return;
    }
    let testdata = testdata();
    let table: Vec<&str> = CASES.iter().map(|c| c.golden).collect();
    assert_eq!(table, goldens_of_template_cmd(), "the table has every case of TestTemplateCmd, in order");
    let mut tally: BTreeMap<String, usize> = BTreeMap::new();
    let mut surprises = Vec::new();
    for case in CASES {
        let (outcome, detail) = run(case, &testdata);
        *tally.entry(format!("{outcome:?}")).or_default() += 1;
        if outcome != case.outcome {
            surprises.push(format!(
                "{} ({}): {outcome:?}, the table says {:?}: {detail}",
                case.name, case.golden, case.outcome
            ));
        }
        if case.outcome != Outcome::Same {
            assert!(!case.note.is_empty(), "{}: a case that is not Same says why", case.name);
        }
    }
    println!("{} cases: {tally:?}", CASES.len());
    assert!(surprises.is_empty(), "{}", surprises.join("\n\n"));
}
