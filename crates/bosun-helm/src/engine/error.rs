//! Template errors as Helm shows them (`parse error at (FILE:LINE): …`, `execution error at
//! (FILE:LINE:COL): …` for `required` and `fail`, otherwise each nested execution's location,
//! node and reason), plus the values the failing action reads, so that the message names
//! the file, the line, the column and the value path.

use std::fmt;
use std::sync::LazyLock;

use regex::Regex;

/// One execution in the chain that failed: the outermost template first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The template file (`chart/templates/x.yaml`; `gotpl` for `tpl` text).
    pub(crate) file: String,
    /// The line, from 1.
    pub(crate) line: usize,
    /// The byte in the line, from 0 (Go's column).
    pub(crate) column: usize,
    /// The template being executed (a file or a `define`).
    pub(crate) template: String,
    /// The node being evaluated, as Go prints it.
    pub(crate) node: String,
    /// What went wrong at this node.
    pub(crate) reason: String,
}

/// Why a chart's templates could not be executed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// A template does not parse.
    #[error("parse error at ({file}:{line}): {reason}")]
    Parse {
        /// The template file.
        file: String,
        /// The line, from 1.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// Executing a template failed.
    #[error("{}", exec_message(.frames, .failure.as_deref(), .values))]
    Exec {
        /// The chain of executions, outermost first (an `include` or `tpl` adds one).
        frames: Vec<Frame>,
        /// The message of the `required` or `fail` that stopped the render.
        failure: Option<String>,
        /// The values the failing action reads (`.Values.image.tag`), innermost first.
        values: Vec<String>,
    },
    /// Anything else the engine refused (Go's wording).
    #[error("{0}")]
    Other(String),
}

fn exec_message(frames: &[Frame], failure: Option<&str>, values: &[String]) -> String {
    let mut out = String::new();
    match (failure, frames.last()) {
        (Some(message), Some(inner)) => {
            out.push_str(&format!("execution error at ({}:{}:{}): {message}", inner.file, inner.line, inner.column));
            for outer in frames.iter().rev().skip(1) {
                out.push_str(&format!("\n  included from {}:{}:{}", outer.file, outer.line, outer.column));
            }
        }
        _ => {
            let levels: Vec<String> = frames
                .iter()
                .map(|f| {
                    format!(
                        "{}:{}:{}\n  executing {:?} at <{}>:\n    {}",
                        f.file, f.line, f.column, f.template, f.node, f.reason
                    )
                })
                .collect();
            out.push_str(&levels.join("\n"));
        }
    }
    if !values.is_empty() {
        out.push_str(&format!("\n  value: {}", values.join(", ")));
    }
    out
}

/// `.Values` paths written in a piece of template text (`.Values.image.tag`, `$.Values.x`).
static VALUE_PATH: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\$?\.Values(?:\.[A-Za-z_][A-Za-z0-9_]*)+").expect("value path regex"));

/// The action (`{{ … }}`) around a column of a line, or the whole line.
fn action_at(line: &str, column: usize) -> &str {
    let column = column.min(line.len());
    let start = line[..column].rfind("{{").unwrap_or(0);
    let end = line[column..].find("}}").map_or(line.len(), |i| column + i + 2);
    line.get(start..end).unwrap_or(line)
}

/// The `.Values` paths the failing action reads: from the innermost frame whose node or
/// action names any (an `include "x" .Values.image` names the table a helper failed on).
pub(super) fn value_paths(frames: &[Frame], source: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    for frame in frames.iter().rev() {
        let mut found: Vec<String> = VALUE_PATH.find_iter(&frame.node).map(|m| m.as_str().to_string()).collect();
        if found.is_empty()
            && let Some(text) = source(&frame.file)
            && let Some(line) = text.lines().nth(frame.line.saturating_sub(1))
        {
            found = VALUE_PATH.find_iter(action_at(line, frame.column)).map(|m| m.as_str().to_string()).collect();
        }
        found.dedup();
        if !found.is_empty() {
            return found;
        }
    }
    Vec::new()
}

/// The chain of frames of an engine error, outermost first. A nested error that is not an
/// execution error with a location (a parse error inside `tpl`) ends the chain inside the
/// last frame's reason.
pub(super) fn frames(error: &bosun_gotemplate::Error) -> Vec<Frame> {
    let mut frames = Vec::new();
    let mut current = error;
    while let bosun_gotemplate::Error::Exec { template, trace: Some(trace), .. } = current {
        let mut reason = trace.reason.clone();
        let nested = trace.cause.as_deref();
        if let Some(cause) = nested
            && !matches!(cause, bosun_gotemplate::Error::Exec { trace: Some(_), .. })
        {
            reason = format!("{reason}: {cause}");
        }
        frames.push(Frame {
            file: trace.file.clone(),
            line: trace.line,
            column: trace.column,
            template: template.clone(),
            node: trace.node.clone(),
            reason,
        });
        match nested {
            Some(cause) => current = cause,
            None => break,
        }
    }
    frames
}

impl fmt::Display for Frame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(file: &str, line: usize, column: usize, node: &str, reason: &str) -> Frame {
        Frame { file: file.into(), line, column, template: file.into(), node: node.into(), reason: reason.into() }
    }

    #[test]
    fn value_paths_come_from_the_innermost_frame_that_names_any() {
        let frames = [
            frame("c/templates/d.yaml", 2, 10, "include \"image\" .Values.image", "error calling include"),
            frame("c/templates/_h.tpl", 1, 3, "required \"tag\" .tag", "error calling required: tag"),
        ];
        assert_eq!(value_paths(&frames, &|_| None), [".Values.image"]);
        let source = |_: &str| Some("a: 1\n  - name: {{ .Values.nonExistentKey | b64enc }} {{ .Values.other }}".into());
        let frames = [frame("c/templates/pod.yaml", 2, 38, "b64enc", "invalid value; expected string")];
        assert_eq!(value_paths(&frames, &source), [".Values.nonExistentKey"]);
    }

    #[test]
    fn messages_read_as_helms_with_the_value_named() {
        let frames = vec![frame("c/templates/pod.yaml", 7, 38, "b64enc", "invalid value; expected string")];
        let error = TemplateError::Exec { frames, failure: None, values: vec![".Values.nonExistentKey".into()] };
        assert_eq!(
            error.to_string(),
            "c/templates/pod.yaml:7:38\n  executing \"c/templates/pod.yaml\" at <b64enc>:\n    invalid value; expected string\n  value: .Values.nonExistentKey"
        );
        let frames = vec![
            frame("c/templates/d.yaml", 2, 10, "include \"image\" .Values.image", "error calling include"),
            frame("c/templates/_h.tpl", 1, 3, "required \"tag\" .tag", "error calling required: tag is required"),
        ];
        let error = TemplateError::Exec {
            frames,
            failure: Some("tag is required".into()),
            values: vec![".Values.image".into()],
        };
        assert_eq!(
            error.to_string(),
            "execution error at (c/templates/_h.tpl:1:3): tag is required\n  included from c/templates/d.yaml:2:10\n  value: .Values.image"
        );
    }
}
