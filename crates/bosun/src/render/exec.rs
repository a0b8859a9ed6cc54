//! The exec renderer (and the process runner kustomize uses): run a command, feed it the
//! configuration, read the YAML stream it prints. Output and errors are read on their own
//! threads so a chatty command cannot block on a full pipe; a deadline kills it.

use std::{
    io::{Read, Write},
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Duration,
};

use super::{
    Input, Manifests, RenderError,
    output::{self, Output},
    push_stream,
};
use crate::package::ExecSpec;
use bosun_core::yaml;

/// Default bound on an exec renderer.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Lines of stderr shown when a command fails.
const STDERR_LINES: usize = 20;

/// A program found on `PATH` (the `which` of a shell).
pub fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|candidate| candidate.is_file())
}

fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    let start = lines.len().saturating_sub(STDERR_LINES);
    lines[start..].join("\n")
}

/// What a finished command printed.
pub struct Finished {
    /// Its standard output.
    pub stdout: String,
}

/// Runs `program args…` in `dir` with `input` on stdin and extra environment, within `timeout`.
/// A non-zero exit is an error carrying the tail of stderr.
pub fn run(
    program: &Path,
    args: &[String],
    dir: &Path,
    input: &[u8],
    env: &[(&str, &str)],
    timeout: Duration,
    shown: &str,
) -> Result<Finished, RenderError> {
    let failed = |message: String| RenderError::Command { command: shown.to_string(), message };
    let mut child = Command::new(program)
        .args(args)
        .current_dir(dir)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| failed(format!("cannot run {}: {e}", program.display())))?;
    let mut stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    // The output is read to its end on its own thread, which reports when the command closed
    // it (normally: exited); the deadline applies to that moment.
    let (done, output) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = done.send(stdout.read_to_string(&mut text).map(|_| text));
    });
    let err_reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read its input closes the pipe early; that is not an error.
        let _ = stdin.write_all(input);
    }
    let stdout = match output.recv_timeout(timeout) {
        Ok(read) => read,
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            let shown_timeout = bosun_core::duration::Interval(timeout);
            return Err(failed(format!("timed out after {shown_timeout} and was stopped")));
        }
    };
    let status = child.wait().map_err(|e| failed(format!("waiting for it failed: {e}")))?;
    let stdout = stdout.map_err(|_| failed("its output is not UTF-8".into()))?;
    let stderr = err_reader.join().unwrap_or_default();
    if !status.success() {
        let code =
            status.code().map_or_else(|| "was killed by a signal".to_string(), |c| format!("exited with status {c}"));
        let detail = tail(&stderr);
        let message = if detail.is_empty() { code } else { format!("{code}:\n{detail}") };
        return Err(failed(message));
    }
    Ok(Finished { stdout })
}

/// Runs the exec renderer: the configuration as JSON on stdin and in `BOSUN_CONFIG`, further
/// inputs as JSON in `BOSUN_<NAME>` (`BOSUN_RELATED`, `BOSUN_FINALIZING`); objects from stdout.
/// One JSON document in the response form ([`output::is_response`]) is read as such.
pub fn render(package_dir: &Path, spec: &ExecSpec, input: &Input<'_>) -> Result<Output, RenderError> {
    let Some((program, args)) = spec.command.split_first() else {
        return Err(RenderError::Command {
            command: "exec".into(),
            message: "spec.render.exec.command is empty".into(),
        });
    };
    let shown = spec.command.join(" ");
    let program_path = if program.contains('/') {
        let path = package_dir.join(program);
        std::path::absolute(&path).unwrap_or(path)
    } else {
        find_program(program).ok_or_else(|| RenderError::Command {
            command: shown.clone(),
            message: format!("{program} is not on PATH"),
        })?
    };
    let config_json = input.config.to_string();
    let extra: Vec<(String, String)> =
        input.extra.iter().map(|(name, value)| (format!("BOSUN_{}", name.to_uppercase()), value.to_string())).collect();
    let mut env: Vec<(&str, &str)> = vec![("BOSUN_CONFIG", &config_json)];
    env.extend(extra.iter().map(|(name, value)| (name.as_str(), value.as_str())));
    let timeout = spec.timeout.map_or(DEFAULT_TIMEOUT, |t| t.0);
    let finished = run(&program_path, args, package_dir, config_json.as_bytes(), &env, timeout, &shown)?;
    let origin = format!("output of `{shown}`");
    let mut documents = yaml::parse_stream(&finished.stdout, &origin)?;
    if documents.len() == 1 && output::is_response(&documents[0]) {
        return output::interpret(documents.remove(0), &origin);
    }
    let mut manifests = Manifests::default();
    push_stream(&mut manifests, documents);
    Ok(Output { manifests, ..Output::default() })
}
