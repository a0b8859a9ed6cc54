//! What `helm template` does with rendered templates: notes set aside, partials skipped,
//! documents split on `---` lines, hooks told from manifests, manifests put in Helm's install
//! order, and the whole printed as `---\n# Source: <template>\n<document as rendered>`.
//!
//! The caller executes the templates; this module takes the text of each (a map from Helm's
//! template name, `chart/templates/x.yaml`, to text) and returns a [`RenderedChart`]: CRDs from
//! `crds/`, manifests and hooks, each with its parsed object and its text as rendered (Helm
//! prints the text, not a re-serialisation).

use regex::Regex;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::LazyLock;

use crate::chart::{Chart, Crd};
use crate::golang::json_kind;
use crate::yaml::{self, YamlError};
use bosun_glob::Pattern;

/// `helm.sh/hook`: the events a hook runs at ([`HookEvent`]).
pub const HOOK_ANNOTATION: &str = "helm.sh/hook";
/// `helm.sh/hook-weight`: a string integer ordering hooks of one event.
pub const HOOK_WEIGHT_ANNOTATION: &str = "helm.sh/hook-weight";
/// `helm.sh/hook-delete-policy`: when a hook's object is deleted ([`HookDeletePolicy`]).
pub const HOOK_DELETE_ANNOTATION: &str = "helm.sh/hook-delete-policy";
/// `helm.sh/hook-output-log-policy`: when a hook's logs are shown.
pub(crate) const HOOK_OUTPUT_LOG_ANNOTATION: &str = "helm.sh/hook-output-log-policy";
/// The delete policy of a hook that names none.
pub(crate) const DEFAULT_DELETE_POLICY: &str = "before-hook-creation";

/// Helm's install order of kinds; other kinds follow, by name.
pub(crate) const INSTALL_ORDER: &[&str] = &[
    "PriorityClass",
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
];

/// The events a hook can run at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookEvent {
    /// `pre-install`.
    PreInstall,
    /// `post-install`.
    PostInstall,
    /// `pre-delete`.
    PreDelete,
    /// `post-delete`.
    PostDelete,
    /// `pre-upgrade`.
    PreUpgrade,
    /// `post-upgrade`.
    PostUpgrade,
    /// `pre-rollback`.
    PreRollback,
    /// `post-rollback`.
    PostRollback,
    /// `test` (also written `test-success`, its old name).
    Test,
}

impl HookEvent {
    /// The event a `helm.sh/hook` value names, as Helm spells it (Helm trims and lower-cases
    /// the value first); `None` for any other word, `crd-install` (Helm 2's) included.
    pub fn parse(name: &str) -> Option<HookEvent> {
        Some(match name {
            "pre-install" => HookEvent::PreInstall,
            "post-install" => HookEvent::PostInstall,
            "pre-delete" => HookEvent::PreDelete,
            "post-delete" => HookEvent::PostDelete,
            "pre-upgrade" => HookEvent::PreUpgrade,
            "post-upgrade" => HookEvent::PostUpgrade,
            "pre-rollback" => HookEvent::PreRollback,
            "post-rollback" => HookEvent::PostRollback,
            "test" | "test-success" => HookEvent::Test,
            _ => return None,
        })
    }
}

/// The policies of `helm.sh/hook-delete-policy`: when a hook's object is deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookDeletePolicy {
    /// `before-hook-creation`, the default: the previous instance goes before the hook is
    /// created again.
    BeforeHookCreation,
    /// `hook-succeeded`: deleted once it succeeded.
    HookSucceeded,
    /// `hook-failed`: deleted when it failed.
    HookFailed,
}

impl HookDeletePolicy {
    /// The policy a `helm.sh/hook-delete-policy` value names, as Helm spells it.
    pub fn parse(name: &str) -> Option<HookDeletePolicy> {
        Some(match name {
            DEFAULT_DELETE_POLICY => HookDeletePolicy::BeforeHookCreation,
            "hook-succeeded" => HookDeletePolicy::HookSucceeded,
            "hook-failed" => HookDeletePolicy::HookFailed,
            _ => return None,
        })
    }
}

/// Why rendered text could not be assembled.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ManifestError {
    /// A document is not YAML, or its head (`apiVersion`, `kind`, `metadata.name`,
    /// `metadata.annotations`) is not of the types Kubernetes objects have.
    #[error("YAML parse error on {source_file} (document {document}): {message}")]
    Parse {
        /// The template, as `chart/templates/x.yaml`.
        source_file: String,
        /// The 0-based index of the document in the template's output.
        document: usize,
        /// What is wrong.
        message: String,
    },
    /// A `--show-only` pattern that matches no template.
    #[error("could not find template {0} in chart")]
    ShowOnly(String),
}

/// A rendered object that is not a hook.
#[derive(Debug, Clone, PartialEq)]
pub struct ChartManifest {
    /// The template it came from (`chart/templates/x.yaml`).
    pub source: String,
    /// The parsed document, integers kept as integers (see [`yaml::parse_object`]); `null`
    /// for a document holding only comments, which Helm keeps and prints.
    pub object: Value,
    /// The document's text as rendered (leading white space removed, as Helm does).
    pub(crate) text: String,
}

/// A rendered hook.
#[derive(Debug, Clone, PartialEq)]
pub struct ChartHook {
    /// The template it came from.
    pub source: String,
    /// The parsed document.
    pub object: Value,
    /// The document's text as rendered.
    pub(crate) text: String,
    /// `metadata.name`.
    pub(crate) name: String,
    /// `kind`.
    pub(crate) kind: String,
    /// The events of `helm.sh/hook`.
    pub events: Vec<HookEvent>,
    /// `helm.sh/hook-weight` (0 when absent or not an integer).
    pub(crate) weight: i64,
    /// `helm.sh/hook-delete-policy`, lower-cased; `before-hook-creation` when none is given
    /// (the default Helm applies when it runs the hook).
    pub(crate) delete_policies: Vec<String>,
    /// `helm.sh/hook-output-log-policy`, lower-cased.
    pub(crate) output_log_policies: Vec<String>,
}

/// What rendering a chart produced, in the order `helm template` prints it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RenderedChart {
    /// CRD files from `crds/` directories (parent first), printed only with `--include-crds`.
    pub crds: Vec<Crd>,
    /// Manifests in install order (kind, then template name, then position in the template).
    pub manifests: Vec<ChartManifest>,
    /// Hooks by kind (then template name and position); see `hooks_for_event`.
    pub hooks: Vec<ChartHook>,
    /// `NOTES.txt` as Helm shows it.
    pub notes: String,
}

static SEPARATOR: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?m)^---[ \t]*").expect("separator regex"));

/// Helm's `SplitManifests`: the documents of a template's output, split at every line
/// starting with `---` (what follows on that line is dropped with it), empty ones dropped,
/// leading white space removed.
pub fn split_manifests(text: &str) -> Vec<String> {
    SEPARATOR
        .split(text.trim_start())
        .filter(|document| !document.trim().is_empty())
        .map(|document| document.trim_start().to_string())
        .collect()
}

/// The position of a kind in Helm's install order: known kinds first, others by name.
fn kind_rank(kind: &str) -> (usize, &str) {
    match INSTALL_ORDER.iter().position(|k| *k == kind) {
        Some(index) => (index, ""),
        None => (INSTALL_ORDER.len(), kind),
    }
}

/// The head of a document as Helm's `SimpleHead` reads it.
struct Head {
    kind: String,
    name: String,
    annotations: BTreeMap<String, String>,
}

fn head(object: &Value) -> Result<Head, String> {
    let text_field = |value: Option<&Value>, field: &str| match value {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => {
            Err(format!("json: cannot unmarshal {} into Go struct field {field} of type string", json_kind(other)))
        }
    };
    match object {
        Value::Null => Ok(Head { kind: String::new(), name: String::new(), annotations: BTreeMap::new() }),
        Value::Object(map) => {
            text_field(map.get("apiVersion"), "SimpleHead.apiVersion")?;
            let kind = text_field(map.get("kind"), "SimpleHead.kind")?;
            let (name, annotations) = match map.get("metadata") {
                None | Some(Value::Null) => (String::new(), BTreeMap::new()),
                Some(Value::Object(metadata)) => {
                    let name = text_field(metadata.get("name"), "SimpleHead.metadata.name")?;
                    let annotations = match metadata.get("annotations") {
                        None | Some(Value::Null) => BTreeMap::new(),
                        Some(Value::Object(entries)) => entries
                            .iter()
                            .map(|(k, v)| Ok((k.clone(), text_field(Some(v), "SimpleHead.metadata.annotations")?)))
                            .collect::<Result<_, String>>()?,
                        Some(other) => {
                            return Err(format!(
                                "json: cannot unmarshal {} into Go struct field SimpleHead.metadata.annotations of type map[string]string",
                                json_kind(other)
                            ));
                        }
                    };
                    (name, annotations)
                }
                Some(other) => {
                    return Err(format!(
                        "json: cannot unmarshal {} into Go struct field SimpleHead.metadata",
                        json_kind(other)
                    ));
                }
            };
            Ok(Head { kind, name, annotations })
        }
        other => Err(format!("json: cannot unmarshal {} into Go value of type util.SimpleHead", json_kind(other))),
    }
}

fn annotation_list(annotations: &BTreeMap<String, String>, key: &str) -> Vec<String> {
    annotations.get(key).map_or_else(Vec::new, |v| v.split(',').map(|p| p.trim().to_lowercase()).collect())
}

/// Go's `strconv.Atoi`.
fn atoi(text: &str) -> Option<i64> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// What to assemble, besides the rendered text.
#[derive(Debug, Clone, Copy, Default)]
pub struct AssembleOptions {
    /// Keep the notes of subcharts too (`--render-subchart-notes`).
    pub(crate) subchart_notes: bool,
}

/// Helm's `SortManifests` and the notes handling of `renderResources`: `rendered` maps each
/// template name to its output (partials may be included; they are skipped), `chart` is the
/// chart after dependency processing (for its name and CRDs).
pub fn assemble(
    chart: &Chart,
    rendered: &BTreeMap<String, String>,
    options: AssembleOptions,
) -> Result<RenderedChart, ManifestError> {
    let root_notes = format!("{}/templates/NOTES.txt", chart.name());
    let mut notes = Vec::new();
    let mut manifests = Vec::new();
    let mut hooks = Vec::new();
    for (source, text) in rendered {
        if source.ends_with("NOTES.txt") {
            if options.subchart_notes || *source == root_notes {
                notes.push(text.as_str());
            }
            continue;
        }
        let base = source.rsplit('/').next().unwrap_or(source);
        if base.starts_with('_') || text.trim().is_empty() {
            continue;
        }
        for (index, document) in split_manifests(text).into_iter().enumerate() {
            let parse_error =
                |message: String| ManifestError::Parse { source_file: source.clone(), document: index, message };
            let object = yaml::parse_object(&document)
                .map_err(|e: YamlError| parse_error(format!("error converting YAML to JSON: {e}")))?;
            let head = head(&object).map_err(parse_error)?;
            let Some(hook_types) = head.annotations.get(HOOK_ANNOTATION) else {
                manifests.push((
                    kind_rank(&head.kind).0,
                    head.kind,
                    ChartManifest { source: source.clone(), object, text: document },
                ));
                continue;
            };
            let events: Option<Vec<HookEvent>> =
                hook_types.split(',').map(|t| HookEvent::parse(&t.trim().to_lowercase())).collect();
            // A hook naming an unknown event is dropped altogether, as Helm does.
            let Some(events) = events else { continue };
            let mut delete_policies = annotation_list(&head.annotations, HOOK_DELETE_ANNOTATION);
            if delete_policies.is_empty() {
                delete_policies.push(DEFAULT_DELETE_POLICY.to_string());
            }
            let hook = ChartHook {
                source: source.clone(),
                object,
                text: document,
                name: head.name,
                kind: head.kind.clone(),
                events,
                weight: head.annotations.get(HOOK_WEIGHT_ANNOTATION).and_then(|w| atoi(w)).unwrap_or(0),
                delete_policies,
                output_log_policies: annotation_list(&head.annotations, HOOK_OUTPUT_LOG_ANNOTATION),
            };
            hooks.push((kind_rank(&head.kind).0, head.kind, hook));
        }
    }
    // Stable sorts: within a kind, template name then position in the template.
    manifests.sort_by(|a, b| kind_rank(&a.1).cmp(&kind_rank(&b.1)));
    hooks.sort_by(|a, b| kind_rank(&a.1).cmp(&kind_rank(&b.1)));
    Ok(RenderedChart {
        crds: chart.crd_objects(chart.name()),
        manifests: manifests.into_iter().map(|(_, _, m)| m).collect(),
        hooks: hooks.into_iter().map(|(_, _, h)| h).collect(),
        notes: notes.join("\n"),
    })
}

/// The hooks of one event in the order Helm runs them: by weight, then name (kinds already
/// ordered).
// Only the tests select hooks by event; bosun runs them from `RenderedChart::hooks` itself.
#[cfg(test)]
pub(crate) fn hooks_for_event(hooks: &[ChartHook], event: HookEvent) -> Vec<&ChartHook> {
    let mut selected: Vec<&ChartHook> = hooks.iter().filter(|h| h.events.contains(&event)).collect();
    selected.sort_by(|a, b| a.weight.cmp(&b.weight).then_with(|| a.name.cmp(&b.name)));
    selected
}

/// What to print, as `helm template`'s flags choose.
#[derive(Debug, Clone, Copy, Default)]
pub struct PrintOptions {
    /// `--include-crds`.
    pub include_crds: bool,
    /// `--skip-tests`: leave out `test` hooks.
    pub skip_tests: bool,
    /// `--no-hooks`.
    pub no_hooks: bool,
}

/// The text `helm template` prints.
pub fn print(rendered: &RenderedChart, options: PrintOptions) -> String {
    let mut manifest = String::new();
    if options.include_crds {
        for crd in &rendered.crds {
            manifest.push_str(&format!("---\n# Source: {}\n{}\n", crd.filename, String::from_utf8_lossy(&crd.data)));
        }
    }
    for m in &rendered.manifests {
        manifest.push_str(&format!("---\n# Source: {}\n{}\n", m.source, m.text));
    }
    let mut out = format!("{}\n", manifest.trim());
    if !options.no_hooks {
        for hook in &rendered.hooks {
            if options.skip_tests && hook.events.contains(&HookEvent::Test) {
                continue;
            }
            out.push_str(&format!("---\n# Source: {}\n{}\n", hook.source, hook.text));
        }
    }
    out
}

static SOURCE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"# Source: [^/]+/(.+)").expect("source regex"));

/// `helm template --show-only`: the documents of `printed` (the output of [`print()`]) whose
/// template path below the chart (`templates/x.yaml`, `charts/sub/templates/x.yaml`) matches
/// a `filepath.Match` pattern, pattern by pattern; a pattern matching none is an error.
pub fn show_only(printed: &str, patterns: &[&str]) -> Result<String, ManifestError> {
    let documents = split_manifests(printed);
    let mut out = String::new();
    for pattern in patterns {
        let matcher = Pattern::filepath(pattern).ok();
        let mut found = false;
        for document in &documents {
            let Some(path) = SOURCE.captures(document).map(|c| c[1].to_string()) else { continue };
            if matcher.as_ref().is_some_and(|m| m.matches(&path)) {
                out.push_str(&format!("---\n{document}\n"));
                found = true;
            }
        }
        if !found {
            return Err(ManifestError::ShowOnly(pattern.to_string()));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::Metadata;
    use serde_json::json;

    fn chart(name: &str) -> Chart {
        Chart { metadata: Metadata { name: name.into(), ..Metadata::default() }, ..Chart::default() }
    }

    fn rendered(files: &[(&str, &str)]) -> BTreeMap<String, String> {
        files.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    /// Cases from Helm's `manifest_test.go` and the separator's edge cases.
    #[test]
    fn documents_split_as_helm_splits_them() {
        let cases: &[(&str, &[&str])] = &[
            ("", &[]),
            ("   \n\n", &[]),
            ("a: 1\n", &["a: 1\n"]),
            ("---\na: 1\n---\nb: 2\n", &["a: 1\n", "b: 2\n"]),
            ("a: 1\n---   \nb: 2\n---\n\n---\n", &["a: 1\n", "b: 2\n"]),
            ("a: 1\n--- # comment\nb: 2", &["a: 1\n", "# comment\nb: 2"]),
            ("a: |\n  x\n  ---\nb: 2", &["a: |\n  x\n  ---\nb: 2"]),
            ("a: 1\n---b: 2\n", &["a: 1\n", "b: 2\n"]),
            ("\n\n  # lead\nkind: A\n", &["# lead\nkind: A\n"]),
        ];
        for (text, want) in cases {
            assert_eq!(split_manifests(text), *want, "{text:?}");
        }
    }

    #[test]
    fn manifests_sort_by_kind_then_file_then_position() {
        let files = rendered(&[
            ("c/templates/b.yaml", "kind: Deployment\nmetadata: {name: d}\n---\nkind: Service\nmetadata: {name: s2}\n"),
            (
                "c/templates/a.yaml",
                "kind: Zebra\nmetadata: {name: z}\n---\nkind: Service\nmetadata: {name: s1}\n---\nkind: Apple\n",
            ),
            ("c/templates/_helpers.tpl", "kind: Namespace\n"),
            ("c/templates/NOTES.txt", "notes"),
            ("c/templates/empty.yaml", "  \n"),
            ("c/templates/ns.yaml", "---\nkind: Namespace\nmetadata:\n  name: ns\n"),
        ]);
        let result = assemble(&chart("c"), &files, AssembleOptions::default()).unwrap();
        let order: Vec<(&str, &str)> = result
            .manifests
            .iter()
            .map(|m| (m.source.as_str(), m.object["kind"].as_str().unwrap_or_default()))
            .collect();
        assert_eq!(
            order,
            [
                ("c/templates/ns.yaml", "Namespace"),
                ("c/templates/a.yaml", "Service"),
                ("c/templates/b.yaml", "Service"),
                ("c/templates/b.yaml", "Deployment"),
                ("c/templates/a.yaml", "Apple"),
                ("c/templates/a.yaml", "Zebra"),
            ]
        );
        assert_eq!(result.notes, "notes");
        assert_eq!(result.manifests[0].text, "kind: Namespace\nmetadata:\n  name: ns\n");
    }

    #[test]
    fn hooks_are_classified_as_helm_does() {
        let files = rendered(&[(
            "c/templates/hooks.yaml",
            "kind: Job\nmetadata:\n  name: b\n  annotations:\n    helm.sh/hook: pre-install, Post-Upgrade\n    helm.sh/hook-weight: \"-5\"\n
---
kind: Pod
metadata:
  name: t
  annotations: {helm.sh/hook: test-success, helm.sh/hook-delete-policy: 'Hook-Succeeded,hook-failed'}
---
kind: ConfigMap
metadata:
  name: a
  annotations: {helm.sh/hook: pre-install, helm.sh/hook-weight: 'x'}
---
kind: ConfigMap
metadata:
  name: unknown
  annotations: {helm.sh/hook: 'pre-install,on-fire'}
---
kind: ConfigMap
metadata:
  name: plain
  annotations: {other: x}
",
        )]);
        let result = assemble(&chart("c"), &files, AssembleOptions::default()).unwrap();
        let hooks: Vec<(&str, &[HookEvent], i64, &[String])> = result
            .hooks
            .iter()
            .map(|h| (h.name.as_str(), h.events.as_slice(), h.weight, h.delete_policies.as_slice()))
            .collect();
        assert_eq!(
            hooks,
            [
                ("a", &[HookEvent::PreInstall][..], 0, &["before-hook-creation".to_string()][..]),
                ("t", &[HookEvent::Test][..], 0, &["hook-succeeded".to_string(), "hook-failed".to_string()][..]),
                (
                    "b",
                    &[HookEvent::PreInstall, HookEvent::PostUpgrade][..],
                    -5,
                    &["before-hook-creation".to_string()][..]
                ),
            ],
            "by kind; a hook with an unknown event is dropped"
        );
        assert_eq!(result.manifests.len(), 1);
        assert_eq!(result.manifests[0].object["metadata"]["name"], json!("plain"));
        assert_eq!(result.hooks[0].object["kind"], json!("ConfigMap"));
        let pre_install: Vec<&str> =
            hooks_for_event(&result.hooks, HookEvent::PreInstall).iter().map(|h| h.name.as_str()).collect();
        assert_eq!(pre_install, ["b", "a"], "by weight, then name");
    }

    #[test]
    fn hook_words_are_helms_spelling() {
        assert_eq!(HookEvent::parse("test-success"), Some(HookEvent::Test));
        assert_eq!(HookEvent::parse("Pre-Install"), None, "callers lower-case first");
        assert_eq!(HookEvent::parse("crd-install"), None);
        assert_eq!(HookDeletePolicy::parse(DEFAULT_DELETE_POLICY), Some(HookDeletePolicy::BeforeHookCreation));
        assert_eq!(HookDeletePolicy::parse("hook-failed"), Some(HookDeletePolicy::HookFailed));
        assert_eq!(HookDeletePolicy::parse("HookFailed"), None, "Argo CD's spelling is not Helm's");
    }

    #[test]
    fn bad_documents_name_the_template_and_document() {
        let cases = [
            (
                "kind: A\n---\nkind: [\n",
                "YAML parse error on c/templates/x.yaml (document 1): error converting YAML to JSON: yaml: line",
            ),
            ("kind: 5\n", "cannot unmarshal number into Go struct field SimpleHead.kind of type string"),
            ("kind: [a]\n", "cannot unmarshal array into Go struct field SimpleHead.kind of type string"),
            (
                "kind: A\nmetadata:\n  annotations:\n    helm.sh/hook-weight: 5\n",
                "cannot unmarshal number into Go struct field SimpleHead.metadata.annotations of type string",
            ),
            ("just text\n", "cannot unmarshal string into Go value of type util.SimpleHead"),
        ];
        for (text, want) in cases {
            let error = assemble(&chart("c"), &rendered(&[("c/templates/x.yaml", text)]), AssembleOptions::default())
                .unwrap_err();
            assert!(error.to_string().contains(want), "{text:?}: {error}");
        }
    }

    #[test]
    fn printing_follows_helm_template() {
        let files = rendered(&[
            ("c/templates/cm.yaml", "kind: ConfigMap\nmetadata: {name: a}\n"),
            ("c/templates/t.yaml", "kind: Pod\nmetadata:\n  annotations: {helm.sh/hook: test}\n"),
        ]);
        let mut c = chart("c");
        c.files.push(crate::chart::File {
            name: "crds/x.yaml".into(),
            data: b"kind: CustomResourceDefinition\n".to_vec(),
        });
        let result = assemble(&c, &files, AssembleOptions::default()).unwrap();
        assert_eq!(
            print(&result, PrintOptions::default()),
            "---\n# Source: c/templates/cm.yaml\nkind: ConfigMap\nmetadata: {name: a}\n---\n# Source: c/templates/t.yaml\nkind: Pod\nmetadata:\n  annotations: {helm.sh/hook: test}\n\n"
        );
        assert_eq!(
            print(&result, PrintOptions { include_crds: true, skip_tests: true, no_hooks: false }),
            "---\n# Source: c/crds/x.yaml\nkind: CustomResourceDefinition\n\n---\n# Source: c/templates/cm.yaml\nkind: ConfigMap\nmetadata: {name: a}\n"
        );
    }
}
