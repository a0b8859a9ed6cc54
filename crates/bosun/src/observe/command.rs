//! Running the user's commands: the argument list, the environment, the object on stdin, the
//! retry delay — and checking at start that the commands exist.

use std::{process::Stdio, time::Duration};

use tokio::io::AsyncWriteExt;

use super::{
    ObserveError,
    known::{EventType, Key},
};

/// The longest wait between retries of one object.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(300);

/// The command line for one object: `COMMAND ARGS... [NAMESPACE] NAME OUTPUTS...` (the namespace
/// only for namespaced resources), as oc observe builds it.
pub(crate) fn command_line(command: &[String], key: &Key, namespaced: bool, outputs: &[String]) -> Vec<String> {
    let mut line = command.to_vec();
    if namespaced {
        line.push(key.namespace.clone());
    }
    line.push(key.name.clone());
    line.extend(outputs.iter().cloned());
    line
}

/// The wait before retry number `attempt` (1, 2, …): `base`, doubling each time, at most
/// [`MAX_BACKOFF`].
pub(crate) fn backoff(attempt: u32, base: Duration) -> Duration {
    bosun_core::backoff::Exponential::new(base, MAX_BACKOFF).delay(attempt)
}

/// What to give a command besides its arguments.
#[derive(Debug, Clone, Default)]
pub(crate) struct Extras {
    /// Environment variables to set.
    pub(crate) env: Vec<(String, String)>,
    /// Bytes to write to its stdin (closed after), or `None` to inherit nothing (null).
    pub(crate) stdin: Option<Vec<u8>>,
}

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Exit {
    /// It exited with this code.
    Code(i32),
    /// This signal ended it.
    Signal(i32),
}

/// SIGPIPE: a command ended by it wrote to a reader that had gone — with its output going to
/// ours, that our stdout's reader has gone.
pub const SIGPIPE: i32 = 13;

/// Runs a command to its end, its output going to ours.
pub(crate) async fn execute(line: &[String], extras: Extras) -> std::io::Result<Exit> {
    let (program, args) = line.split_first().ok_or_else(|| std::io::Error::other("empty command"))?;
    let mut command = tokio::process::Command::new(program);
    command.args(args).envs(extras.env).stdin(if extras.stdin.is_some() { Stdio::piped() } else { Stdio::null() });
    let mut child = command.spawn()?;
    if let (Some(bytes), Some(mut stdin)) = (extras.stdin, child.stdin.take()) {
        // A command that does not read its stdin closes the pipe early; that is its choice.
        let _ = stdin.write_all(&bytes).await;
    }
    let status = child.wait().await?;
    Ok(match (status.code(), std::os::unix::process::ExitStatusExt::signal(&status)) {
        (Some(code), _) => Exit::Code(code),
        (None, signal) => Exit::Signal(signal.unwrap_or_default()),
    })
}

/// Checks that a command can be started: a path that is an executable file, or a name found
/// on `PATH`.
pub(crate) fn check(command: &[String], flag: &'static str) -> Result<(), ObserveError> {
    let Some(program) = command.first() else { return Err(ObserveError::NoCommand { flag }) };
    // `which` resolves a path (`./run.sh`) or a name on PATH, and checks it is executable.
    match which::which(program) {
        Ok(_) => Ok(()),
        Err(_) => Err(ObserveError::CommandNotFound { flag, program: program.clone() }),
    }
}

/// The line printed before each run (unless quiet), as oc observe prints it:
/// `# <time> <type> <resourceVersion> <command line>`.
pub fn header(event: EventType, resource_version: &str, line: &[String]) -> String {
    let now = jiff::Timestamp::now().round(jiff::Unit::Second).unwrap_or_else(|_| jiff::Timestamp::now());
    format!(
        "# {now} {} {} {}",
        event.as_str(),
        if resource_version.is_empty() { "-" } else { resource_version },
        shell_words(line)
    )
}

/// Words joined for display, quoted as a POSIX shell would need them.
fn shell_words(line: &[String]) -> String {
    shlex::try_join(line.iter().map(String::as_str)).unwrap_or_else(|_| line.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_are_built_as_oc_observe_does() {
        use crate::observe::{command::command_line, known::Key};
        let key = Key { namespace: "default".into(), name: "web".into() };
        let line =
            command_line(&["./register.sh".into(), "--zone".into(), "a".into()], &key, true, &["10.0.0.1".into()]);
        assert_eq!(line, ["./register.sh", "--zone", "a", "default", "web", "10.0.0.1"]);
    }

    #[test]
    fn command_lines_follow_the_scope() {
        let key = Key { namespace: String::new(), name: "node-1".into() };
        assert_eq!(command_line(&["echo".into()], &key, false, &[]), ["echo", "node-1"]);
    }

    #[test]
    fn commands_must_exist() {
        assert!(check(&["sh".into()], "command").is_ok());
        assert!(check(&["/bin/sh".into()], "command").is_ok());
        let missing = check(&["no-such-command-here".into()], "--delete").unwrap_err();
        assert_eq!(missing.to_string(), "--delete: command \"no-such-command-here\" not found or not executable");
        assert!(check(&[], "command").is_err());
    }

    #[test]
    fn headers_quote_what_needs_it() {
        let words = ["echo", "a b", "it's", "", "{.data.k}"].map(String::from);
        assert_eq!(shell_words(&words), r#"echo 'a b' "it's" '' '{.data.k}'"#);
    }
}
