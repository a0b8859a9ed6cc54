//! The exec renderer (and the process runner kustomize uses): run a command, feed it the
//! configuration, read the YAML stream it prints. Output and errors are read on their own
//! threads so a chatty command cannot block on a full pipe; a deadline kills it.

use std::{
    io::{Read, Write},
    os::unix::process::ExitStatusExt,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Duration,
};

use super::{
    Input, Manifests, RenderError, confine,
    output::{self, Output},
    push_stream,
};
use bosun_api::package::ExecSpec;
use bosun_core::yaml;

/// The signals the kernel stops a process with at its CPU time and file size limits.
const SIGXCPU: i32 = 24;
const SIGXFSZ: i32 = 25;

/// Default bound on an exec renderer.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Lines of stderr shown when a command fails.
const STDERR_LINES: usize = 20;

/// A program found on `PATH` (the `which` of a shell).
pub(crate) fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|candidate| candidate.is_file())
}

fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    let start = lines.len().saturating_sub(STDERR_LINES);
    lines[start..].join("\n")
}

/// What a finished command printed.
pub(crate) struct Finished {
    /// Its standard output.
    pub(crate) stdout: String,
}

/// Runs `command` (program, arguments, directory and environment set) with `input` on stdin,
/// within `timeout` and, if given, `output_limit` bytes of stdout. A non-zero exit is an error
/// carrying the tail of stderr. At the deadline the command is killed, with its process group
/// when it leads one (a confined command does).
pub(crate) fn run(
    mut command: Command,
    input: &[u8],
    timeout: Duration,
    confinement: Option<&confine::Confinement<'_>>,
    shown: &str,
) -> Result<Finished, RenderError> {
    let failed = |message: String| RenderError::Command { command: shown.to_string(), message };
    let program = command.get_program().to_string_lossy().into_owned();
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let (mut child, _scratch) = match confinement {
        Some(confinement) => confine::spawn(command, confinement).map(|(child, scratch)| (child, Some(scratch))),
        None => command.spawn().map(|child| (child, None)),
    }
    .map_err(|e| failed(format!("cannot run {program}: {e}")))?;
    let output_limit = confinement.map(|c| c.limits.output);
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    // The output is read to its end (or its limit) on its own thread, which reports when the
    // command closed it (normally: exited); the deadline applies to that moment.
    let (done, output) = std::sync::mpsc::channel();
    let limit = output_limit.map_or(u64::MAX, |l| l as u64 + 1);
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = done.send(stdout.take(limit).read_to_end(&mut bytes).map(|_| bytes));
    });
    let err_reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.take(1 << 20).read_to_string(&mut text);
        text
    });
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read its input closes the pipe early; that is not an error.
        let _ = stdin.write_all(input);
    }
    let stop = |child: &mut std::process::Child| {
        // The group a confined child leads goes too (its own children); others have none.
        if confinement.is_some() {
            let pid = rustix::process::Pid::from_child(child);
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
        let _ = child.kill();
        let _ = child.wait();
    };
    let stdout = match output.recv_timeout(timeout) {
        Ok(read) => read,
        Err(_) => {
            stop(&mut child);
            let shown_timeout = bosun_api::Interval(timeout);
            return Err(failed(format!("timed out after {shown_timeout} and was stopped")));
        }
    };
    if let (Ok(bytes), Some(limit)) = (&stdout, output_limit)
        && bytes.len() > limit
    {
        stop(&mut child);
        return Err(failed(format!("printed more than {} MiB and was stopped", limit >> 20)));
    }
    let status = child.wait().map_err(|e| failed(format!("waiting for it failed: {e}")))?;
    let stdout = stdout
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or_else(|| failed("its output is not UTF-8".into()))?;
    let stderr = err_reader.join().unwrap_or_default();
    if !status.success() {
        let code = match (status.code(), status.signal()) {
            (Some(code), _) => format!("exited with status {code}"),
            (None, Some(SIGXCPU)) => "used up its CPU time limit and was stopped".to_string(),
            (None, Some(SIGXFSZ)) => "wrote a file over its size limit and was stopped".to_string(),
            (None, _) => "was killed by a signal".to_string(),
        };
        let detail = tail(&stderr);
        let message = if detail.is_empty() { code } else { format!("{code}:\n{detail}") };
        return Err(failed(message));
    }
    Ok(Finished { stdout })
}

/// Runs the exec renderer: the configuration as JSON on stdin and in `BOSUN_CONFIG`, further
/// inputs as JSON in `BOSUN_<NAME>` (`BOSUN_RELATED`, `BOSUN_FINALIZING`); objects from stdout.
/// One JSON document in the response form ([`output::is_response`]) is read as such.
pub(crate) fn render(package_dir: &Path, spec: &ExecSpec, input: &Input<'_>) -> Result<Output, RenderError> {
    let limits = input.sandbox.map(|sandbox| sandbox.exec_limits("spec.render.exec")).transpose()?;
    let Some((program, args)) = spec.command.split_first() else {
        return Err(RenderError::Command {
            command: "exec".into(),
            message: "spec.render.exec.command is empty".into(),
        });
    };
    let shown = spec.command.join(" ");
    let program_path = if program.contains('/') {
        let path = match input.sandbox {
            Some(sandbox) => sandbox.resolve(package_dir, program, "spec.render.exec.command[0]")?,
            None => package_dir.join(program),
        };
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
    let mut command = Command::new(&program_path);
    command.args(args).current_dir(package_dir).env("BOSUN_CONFIG", &config_json).envs(extra);
    // Allowed exec renderers may reach the network (as Argo CD's plugins do); they hold no
    // credentials to use there.
    let confinement = input.sandbox.zip(limits).map(|(sandbox, limits)| confine::Confinement {
        root: &sandbox.root,
        network: true,
        limits,
    });
    let timeout = spec.timeout.map_or(DEFAULT_TIMEOUT, |t| t.0);
    let finished = run(command, config_json.as_bytes(), timeout, confinement.as_ref(), &shown)?;
    let origin = format!("output of `{shown}`");
    let mut documents = yaml::parse_stream(&finished.stdout, &origin)?;
    if documents.len() == 1 && output::is_response(&documents[0]) {
        return output::interpret(documents.remove(0), &origin);
    }
    let mut manifests = Manifests::default();
    push_stream(&mut manifests, documents);
    Ok(Output { manifests, ..Output::default() })
}
