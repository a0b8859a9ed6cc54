//! Errors, worded as Go words them so that a chart author sees what `helm` would show.

/// An error parsing or executing a template.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The template text does not parse: `template: NAME:LINE: unexpected "}" in operand`.
    #[error("{message}")]
    Parse {
        /// The whole message, Go's wording.
        message: String,
    },
    /// Executing failed: `template: NAME:LINE:COL: executing "NAME" at <NODE>: MESSAGE`.
    #[error("{message}")]
    Exec {
        /// The template being executed when the error happened.
        template: String,
        /// The whole message, Go's wording.
        message: String,
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

/// An error from a function a template called; the engine reports it as
/// `error calling NAME: MESSAGE` at the call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct FuncError {
    message: String,
}

impl FuncError {
    /// An error with the given message.
    pub fn new(message: impl Into<String>) -> FuncError {
        FuncError { message: message.into() }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl From<Error> for FuncError {
    /// An error from a nested execution (Helm's `include`, `tpl`) keeps its full message.
    fn from(error: Error) -> FuncError {
        FuncError::new(error.to_string())
    }
}
