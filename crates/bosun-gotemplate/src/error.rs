//! Errors, worded as Go words them so that a chart author sees what `helm` would show, and
//! structured so that a host can present them its own way (file, line, column, the action at
//! fault, the chain of nested executions).

/// An error parsing or executing a template. `Display` is Go's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The template text does not parse: `template: NAME:LINE: unexpected "}" in operand`.
    #[error("{message}")]
    Parse {
        /// The whole message, Go's wording.
        message: String,
        /// The file it was parsed as (Go's parse name).
        file: String,
        /// The line, from 1.
        line: usize,
        /// What is wrong, without the location.
        reason: String,
    },
    /// Executing failed: `template: NAME:LINE:COL: executing "NAME" at <NODE>: MESSAGE`.
    #[error("{message}")]
    Exec {
        /// The template being executed when the error happened.
        template: String,
        /// The whole message, Go's wording.
        message: String,
        /// Where it happened, when a node was being evaluated (Go's message then has
        /// `executing … at <…>`).
        trace: Option<Box<Trace>>,
    },
    /// `execute` named a template the set does not have.
    #[error("template: no template {name:?} associated with template {set:?}")]
    NoTemplate {
        /// The name asked for.
        name: String,
        /// The set's name.
        set: String,
    },
    /// An unknown `Option` string.
    #[error("{0}")]
    Option(String),
}

/// Where an execution failed and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trace {
    /// The file the failing template was parsed from.
    pub file: String,
    /// The line, from 1.
    pub line: usize,
    /// The byte offset in the line, from 0 (Go's column).
    pub column: usize,
    /// The node being evaluated, as Go prints it (`.Values.image.tag`, `include "x" .`).
    pub node: String,
    /// What went wrong at this node (`nil pointer evaluating interface {}.tag`; for a function
    /// that failed, `error calling NAME` and the function's own words, without `cause`).
    pub reason: String,
    /// For a function that failed because a nested execution did (Helm's `include`, `tpl`):
    /// that execution's error.
    pub cause: Option<Box<Error>>,
}

impl Error {
    /// The innermost error of a chain of nested executions (this one when there is none).
    pub fn innermost(&self) -> &Error {
        match self {
            Error::Exec { trace: Some(trace), .. } => trace.cause.as_deref().map_or(self, Error::innermost),
            _ => self,
        }
    }
}

/// An error from a function a template called; the engine reports it as
/// `error calling NAME: MESSAGE` at the call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{context}{}", .cause.as_deref().map(Error::to_string).unwrap_or_default())]
pub struct FuncError {
    context: String,
    cause: Option<Box<Error>>,
}

impl FuncError {
    /// An error with the given message.
    pub fn new(message: impl Into<String>) -> FuncError {
        FuncError { context: message.into(), cause: None }
    }

    /// An error caused by a nested execution, its message prefixed with `context`
    /// (Helm's `error during tpl function execution for "…": `).
    pub fn wrap(context: impl Into<String>, cause: Error) -> FuncError {
        FuncError { context: context.into(), cause: Some(Box::new(cause)) }
    }

    /// The message.
    pub fn message(&self) -> String {
        self.to_string()
    }

    /// The function's own words, without the nested execution's error.
    pub fn context(&self) -> &str {
        &self.context
    }

    /// The nested execution's error, if one caused this.
    pub fn cause(&self) -> Option<&Error> {
        self.cause.as_deref()
    }

    pub(crate) fn into_parts(self) -> (String, Option<Box<Error>>) {
        (self.context, self.cause)
    }
}

impl From<Error> for FuncError {
    /// An error from a nested execution (Helm's `include`, `tpl`) keeps its full message.
    fn from(error: Error) -> FuncError {
        FuncError::wrap("", error)
    }
}
