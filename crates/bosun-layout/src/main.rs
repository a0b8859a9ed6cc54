//! `bosun-layout [REPO]`: checks the workspace's layout (see the library) and prints what is
//! wrong, one problem a paragraph; exits 1 when anything is, 2 when the check could not run.
//!
//! `bosun-layout --graph [REPO]`: prints the workspace's crate graph, the Mermaid block
//! docs/architecture.md holds (exit 2 when `cargo metadata` fails).

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args: Vec<_> = std::env::args_os().skip(1).collect();
    let graph = args.first().is_some_and(|arg| arg == "--graph");
    if graph {
        args.remove(0);
    }
    let repo = args.first().map_or_else(|| PathBuf::from("."), PathBuf::from);
    if graph {
        return match bosun_layout::crate_graph(&repo) {
            Ok(block) => {
                print!("{block}");
                ExitCode::SUCCESS
            }
            Err(error) => cannot_run(&error),
        };
    }
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
        Err(error) => cannot_run(&error),
    }
}

/// Prints why the check could not run, with every cause, and exits 2.
fn cannot_run(error: &bosun_layout::Error) -> ExitCode {
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        message.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    eprintln!("check-layout: {message}");
    ExitCode::from(2)
}
