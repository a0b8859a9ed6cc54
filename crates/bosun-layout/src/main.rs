//! `bosun-layout [REPO]`: checks the workspace's layout (see the library) and prints what is
//! wrong, one problem a paragraph; exits 1 when anything is, 2 when the check could not run.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let repo = std::env::args_os().nth(1).map_or_else(|| PathBuf::from("."), PathBuf::from);
    match bosun_layout::check(&repo) {
        Ok(problems) if problems.is_empty() => {
            println!(
                "check-layout: no import cycle between a crate's modules, no source file over {} lines outside tests, \
                 README.md and docs/architecture.md as cargo metadata says",
                bosun_layout::MAX_LINES
            );
            ExitCode::SUCCESS
        }
        Ok(problems) => {
            for problem in &problems {
                eprintln!("{problem}");
            }
            eprintln!("check-layout: {} problem(s)", problems.len());
            ExitCode::FAILURE
        }
        Err(error) => {
            let mut message = error.to_string();
            let mut source = std::error::Error::source(&error);
            while let Some(cause) = source {
                message.push_str(&format!(": {cause}"));
                source = cause.source();
            }
            eprintln!("check-layout: {message}");
            ExitCode::from(2)
        }
    }
}
