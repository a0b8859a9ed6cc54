//! What a simulated pod's containers do, as data (kwok's "stages" idea, narrowed to what tests
//! of rollouts and health checks need): run and become ready, complete, fail, crash-loop, never
//! become ready, fail to pull their image — each after a chosen time. A pod's behaviour comes
//! from the annotation `bosun.dev/simulate` on the pod, else on its controller (a ReplicaSet
//! copies its Deployment's annotations, as upstream), else from the first rule of the stages
//! file whose selector matches the pod, else the default: run (a Job's pods complete).
//!
//! The annotation is a word and `key=value` settings, separated by spaces or commas:
//! `fail`, `crash-loop after=5s exit-code=2`, `not-ready`, `start=10s`,
//! `fail container=sidecar`. The file holds the same settings as YAML fields:
//!
//! ```yaml
//! stages:
//! - name: slow databases
//!   namespaces: [db]
//!   selector: app=postgres
//!   start: 20s
//! - selector: tier=flaky
//!   behaviour: crash-loop
//!   after: 5s
//!   exitCode: 2
//! ```

use std::{path::Path, time::Duration};

use serde::Deserialize;
use serde_json::Value;

use crate::selector::LabelSelector;

/// The annotation that chooses what simulated pods do (`fail`, `crash-loop`, …; see
/// `docs/apiserver.md`).
pub const ANNOTATION: &str = "bosun.dev/simulate";

/// Why a stage could not be read.
#[derive(Debug, thiserror::Error)]
pub enum StageError {
    /// A word or setting that means nothing here.
    #[error("{text:?}: {why}")]
    Invalid {
        /// The text.
        text: String,
        /// Why it is refused.
        why: String,
    },
    /// The stages file could not be read.
    #[error("stages file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The stages file is not what it should be.
    #[error("stages file {path}: {message}")]
    File {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
}

/// What the containers do once started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Behaviour {
    /// Run and become ready; a Job's pods then complete.
    #[default]
    Run,
    /// Exit with code 0 (`after` running).
    Complete,
    /// Exit with an error at once (`after`, default 0): a pod that restarts its containers
    /// crash-loops, one that does not fails.
    Fail,
    /// Run (and be ready) for `after` (default: the start time), then exit with an error,
    /// again and again.
    CrashLoop,
    /// Run but never become ready.
    NotReady,
    /// Never start: the image cannot be pulled (`ErrImagePull`, then `ImagePullBackOff`).
    ImagePullError,
}

impl Behaviour {
    fn parse(word: &str) -> Option<Behaviour> {
        Some(match word {
            "run" => Behaviour::Run,
            "complete" => Behaviour::Complete,
            "fail" => Behaviour::Fail,
            "crash-loop" => Behaviour::CrashLoop,
            "not-ready" => Behaviour::NotReady,
            "image-pull-error" => Behaviour::ImagePullError,
            _ => return None,
        })
    }

    const WORDS: &'static str = "run, complete, fail, crash-loop, not-ready, image-pull-error";
}

/// What a pod's containers do and when.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stage {
    /// What the containers do.
    pub behaviour: Behaviour,
    /// How long containers take to start once the pod is on a node (default: the server's
    /// `--workload-delay`).
    pub start: Option<Duration>,
    /// How long containers run before they exit (complete, fail, crash-loop; and a Job's pods
    /// with `run`).
    pub after: Option<Duration>,
    /// The exit code of a failing container (default 1).
    pub exit_code: Option<i32>,
    /// Only this container behaves so; the others run (default: every container).
    pub container: Option<String>,
}

impl Stage {
    /// Reads the annotation's text: a behaviour word and `key=value` settings.
    pub fn parse(text: &str) -> Result<Stage, StageError> {
        let invalid = |why: String| StageError::Invalid { text: text.to_string(), why };
        let mut stage = Stage::default();
        for token in text.split([' ', ',', ';']).map(str::trim).filter(|t| !t.is_empty()) {
            match token.split_once('=') {
                None => {
                    stage.behaviour = Behaviour::parse(token).ok_or_else(|| {
                        invalid(format!("unknown behaviour {token:?} (expected one of {})", Behaviour::WORDS))
                    })?;
                }
                Some((key, value)) => match key {
                    "start" => stage.start = Some(duration(value).map_err(invalid)?),
                    "after" => stage.after = Some(duration(value).map_err(invalid)?),
                    "exit-code" => {
                        stage.exit_code =
                            Some(value.parse().map_err(|_| invalid(format!("exit-code {value:?} is not a number")))?)
                    }
                    "container" => stage.container = Some(value.to_string()),
                    _ => {
                        return Err(invalid(format!(
                            "unknown setting {key:?} (expected start, after, exit-code or container)"
                        )));
                    }
                },
            }
        }
        Ok(stage)
    }

    /// What `container` does under this stage (the others just run).
    pub fn for_container(&self, container: &str) -> Behaviour {
        match &self.container {
            Some(only) if only != container => Behaviour::Run,
            _ => self.behaviour,
        }
    }
}

/// `10s`, `1.5s`, `250ms`, `2m`, `1h`, or a number of seconds.
fn duration(text: &str) -> Result<Duration, String> {
    let (number, unit) =
        text.find(|c: char| !(c.is_ascii_digit() || c == '.')).map_or((text, "s"), |at| (&text[..at], &text[at..]));
    let value: f64 = number.parse().map_err(|_| format!("{text:?} is not a duration (like 10s or 250ms)"))?;
    let seconds = match unit {
        "ms" => value / 1000.0,
        "s" => value,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        _ => return Err(format!("{text:?} is not a duration (like 10s or 250ms)")),
    };
    Duration::try_from_secs_f64(seconds).map_err(|_| format!("{text:?} is not a duration"))
}

/// A rule of the stages file: which pods, and what they do.
#[derive(Debug, Clone)]
pub struct Rule {
    /// The namespaces it applies in (empty: all).
    pub namespaces: Vec<String>,
    /// The pods' labels it applies to.
    pub selector: LabelSelector,
    /// What those pods do.
    pub stage: Stage,
}

impl Rule {
    fn matches(&self, pod: &Value) -> bool {
        let namespace = crate::object::namespace(pod);
        (self.namespaces.is_empty() || self.namespaces.iter().any(|n| n == namespace))
            && self.selector.matches(crate::object::labels(pod))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDocument {
    #[serde(default)]
    stages: Vec<FileRule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct FileRule {
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespaces: Vec<String>,
    #[serde(default)]
    selector: String,
    #[serde(default)]
    behaviour: Option<String>,
    #[serde(default)]
    start: Option<String>,
    #[serde(default)]
    after: Option<String>,
    #[serde(default)]
    exit_code: Option<i32>,
    #[serde(default)]
    container: Option<String>,
}

/// Reads the rules of a stages file (YAML).
pub fn read_rules(path: &Path) -> Result<Vec<Rule>, StageError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| StageError::Read { path: shown.clone(), source })?;
    parse_rules(&text).map_err(|message| StageError::File { path: shown, message })
}

/// Reads the rules of a stages document.
pub fn parse_rules(text: &str) -> Result<Vec<Rule>, String> {
    let document: FileDocument = serde_saphyr::from_str(text).map_err(|e| e.to_string())?;
    document
        .stages
        .into_iter()
        .enumerate()
        .map(|(index, rule)| {
            let name = if rule.name.is_empty() { format!("stage {}", index + 1) } else { rule.name };
            let context = |why: String| format!("{name}: {why}");
            let selector = LabelSelector::parse(&rule.selector).map_err(context)?;
            let behaviour = match rule.behaviour.as_deref() {
                None => Behaviour::Run,
                Some(word) => Behaviour::parse(word).ok_or_else(|| {
                    context(format!("unknown behaviour {word:?} (expected one of {})", Behaviour::WORDS))
                })?,
            };
            let read = |text: Option<String>| text.map(|t| duration(&t)).transpose().map_err(context);
            let stage = Stage {
                behaviour,
                start: read(rule.start)?,
                after: read(rule.after)?,
                exit_code: rule.exit_code,
                container: rule.container,
            };
            Ok(Rule { namespaces: rule.namespaces, selector, stage })
        })
        .collect()
}

/// The annotation's text on an object, if any.
fn annotation(object: &Value) -> Option<&str> {
    object.pointer("/metadata/annotations").and_then(|a| a.get(ANNOTATION)).and_then(Value::as_str)
}

/// The stage of a pod: its own annotation, else its controller's, else the first matching rule,
/// else the default. An annotation that cannot be read is reported and counts as absent.
pub fn stage_of(pod: &Value, controller: Option<&Value>, rules: &[Rule]) -> Result<Stage, StageError> {
    if let Some(text) = annotation(pod).or_else(|| controller.and_then(annotation)) {
        return Stage::parse(text);
    }
    Ok(rules.iter().find(|rule| rule.matches(pod)).map(|rule| rule.stage.clone()).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn annotations_name_a_behaviour_and_settings() {
        let cases = [
            ("fail", Stage { behaviour: Behaviour::Fail, ..Stage::default() }),
            (
                "crash-loop after=5s exit-code=2",
                Stage {
                    behaviour: Behaviour::CrashLoop,
                    after: Some(Duration::from_secs(5)),
                    exit_code: Some(2),
                    ..Stage::default()
                },
            ),
            ("start=250ms", Stage { start: Some(Duration::from_millis(250)), ..Stage::default() }),
            (
                "not-ready, container=web",
                Stage { behaviour: Behaviour::NotReady, container: Some("web".into()), ..Stage::default() },
            ),
            ("image-pull-error", Stage { behaviour: Behaviour::ImagePullError, ..Stage::default() }),
            (
                "complete after=1.5",
                Stage { behaviour: Behaviour::Complete, after: Some(Duration::from_millis(1500)), ..Stage::default() },
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(Stage::parse(text).expect(text), expected, "{text}");
        }
    }

    #[test]
    fn unknown_words_and_settings_are_refused_with_what_is_known() {
        let error = Stage::parse("explode").expect_err("unknown word").to_string();
        assert!(error.contains("unknown behaviour \"explode\""), "{error}");
        assert!(error.contains("crash-loop"), "{error}");
        let error = Stage::parse("fail delay=3s").expect_err("unknown key").to_string();
        assert!(error.contains("unknown setting \"delay\""), "{error}");
        assert!(Stage::parse("start=soon").is_err());
    }

    #[test]
    fn only_the_named_container_misbehaves() {
        let stage = Stage::parse("fail container=sidecar").expect("stage");
        assert_eq!(stage.for_container("sidecar"), Behaviour::Fail);
        assert_eq!(stage.for_container("web"), Behaviour::Run);
    }

    #[test]
    fn the_pod_wins_over_its_controller_and_both_over_rules() {
        let rules = parse_rules(
            "stages:\n- name: flaky\n  namespaces: [shop]\n  selector: tier=flaky\n  behaviour: crash-loop\n  after: 2s\n- selector: ''\n  start: 3s\n",
        )
        .expect("rules");
        let pod = |annotations: Value, namespace: &str, labels: Value| json!({"metadata": {"namespace": namespace, "labels": labels, "annotations": annotations}});
        let controller = json!({"metadata": {"annotations": {ANNOTATION: "not-ready"}}});
        let flaky = pod(json!({}), "shop", json!({"tier": "flaky"}));
        assert_eq!(stage_of(&flaky, None, &rules).expect("rule").behaviour, Behaviour::CrashLoop);
        assert_eq!(stage_of(&flaky, Some(&controller), &rules).expect("controller").behaviour, Behaviour::NotReady);
        let annotated = pod(json!({ANNOTATION: "fail"}), "shop", json!({"tier": "flaky"}));
        assert_eq!(stage_of(&annotated, Some(&controller), &rules).expect("pod").behaviour, Behaviour::Fail);
        let elsewhere = pod(json!({}), "other", json!({"tier": "flaky"}));
        let fallback = stage_of(&elsewhere, None, &rules).expect("catch-all");
        assert_eq!((fallback.behaviour, fallback.start), (Behaviour::Run, Some(Duration::from_secs(3))));
    }

    #[test]
    fn bad_files_name_the_rule() {
        let error = parse_rules("stages:\n- name: oops\n  behaviour: melt\n").expect_err("bad behaviour");
        assert!(error.starts_with("oops: unknown behaviour"), "{error}");
        assert!(parse_rules("stages:\n- wat: 1\n").is_err(), "unknown fields are refused");
    }
}
