//! Rendering, as whole commands side by side: a large jsonnet program by `bosun render` versus
//! the C++ `jsonnet` and go-jsonnet (the `gojsonnet` Python module), and a kustomize package by
//! `bosun render` versus `kubectl kustomize` alone; with `--helm`, a large chart (see [`helm`]);
//! with `--isolation`, rendering in process against in a render worker (see [`isolation`]).

mod helm;
mod isolation;

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Instant,
};

use crate::{bosun_binary, median};

/// Arguments of the render benchmark.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Apps in the large jsonnet program (three objects each), for bosun and go-jsonnet.
    #[arg(long, default_value_t = 1000)]
    apps: usize,
    /// Apps for the run that includes the C++ jsonnet (much slower; kept small).
    #[arg(long, default_value_t = 100)]
    small_apps: usize,
    /// Runs of each command; the median is reported.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Alternating bosun render / kubectl kustomize pairs for the kustomize comparison.
    #[arg(long, default_value_t = 30)]
    pairs: usize,
    /// Instead: a generated Helm chart against `helm template` (when on the PATH) and against
    /// bosun's jsonnet rendering the same objects.
    #[arg(long)]
    helm: bool,
    /// Templates in the generated chart (one app each: a Deployment, a Service, a ConfigMap).
    #[arg(long, default_value_t = 300, requires = "helm")]
    templates: usize,
    /// Instead: the same packages rendered in process and in a render worker (the cost of
    /// `bosun controller`'s isolation), with `--apps` apps in the jsonnet program.
    #[arg(long, conflicts_with = "helm")]
    isolation: bool,
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Median wall time of a command in seconds, output discarded; `None` (with the reason on
/// stderr) if it cannot run.
fn time(command: &mut Command, runs: usize) -> Option<f64> {
    let mut samples = Vec::new();
    for _ in 0..runs {
        let started = Instant::now();
        let output = match command.stdout(Stdio::null()).stderr(Stdio::piped()).output() {
            Ok(output) => output,
            Err(error) => {
                eprintln!("  {:?}: {error}", command.get_program());
                return None;
            }
        };
        if !output.status.success() {
            eprintln!("  {:?} failed: {}", command.get_program(), String::from_utf8_lossy(&output.stderr).trim());
            return None;
        }
        samples.push(started.elapsed().as_secs_f64());
    }
    Some(median(&mut samples))
}

struct Jsonnet {
    bosun: Option<f64>,
    go: Option<f64>,
    cpp: Option<f64>,
}

fn jsonnet_run(apps: usize, runs: usize, with_cpp: bool) -> Jsonnet {
    let program = repo().join("crates/bosun-bench/fixtures/large-jsonnet/main.jsonnet");
    let dir = tempfile::tempdir().expect("tempdir");
    let config_json = format!("{{\"apps\": {apps}}}");
    let config = dir.path().join("config.json");
    std::fs::write(&config, &config_json).expect("config");
    let bosun = time(
        Command::new(bosun_binary())
            .arg("render")
            .arg("--jsonnet")
            .arg(&program)
            .arg("--config")
            .arg(&config)
            .args(["-o", "json"]),
        runs,
    );
    let go_script = format!(
        "import sys, _gojsonnet; sys.stdout.write(_gojsonnet.evaluate_file({:?}, ext_codes={{'config': {:?}}}))",
        program.display().to_string(),
        config_json
    );
    let go = time(Command::new("python3").args(["-c", &go_script]), runs);
    let cpp = if with_cpp {
        time(Command::new("jsonnet").arg("--ext-code").arg(format!("config={config_json}")).arg(&program), runs.min(3))
    } else {
        None
    };
    Jsonnet { bosun, go, cpp }
}

fn shown(seconds: Option<f64>) -> String {
    seconds.map_or_else(|| "not installed".to_string(), |s| format!("{:.3} s", s))
}

fn ratio(other: Option<f64>, ours: Option<f64>) -> String {
    match (other, ours) {
        (Some(other), Some(ours)) if ours > 0.0 => format!("{:.1}×", other / ours),
        _ => "—".to_string(),
    }
}

/// Runs the render benchmarks and prints the Markdown table.
pub fn run(args: Args) {
    if args.helm {
        return helm::run(args.templates, args.runs);
    }
    if args.isolation {
        println!("| workload | in process | alternative | alternative's time | alternative ÷ in process |");
        println!("|---|---|---|---|---|");
        for row in isolation::rows(&repo(), args.apps, args.runs) {
            println!("{row}");
        }
        return;
    }
    eprintln!("jsonnet, {} apps ({} objects): bosun, go-jsonnet…", args.apps, args.apps * 3);
    let large = jsonnet_run(args.apps, args.runs, false);
    eprintln!("jsonnet, {} apps ({} objects): bosun, go-jsonnet, C++ jsonnet…", args.small_apps, args.small_apps * 3);
    let small = jsonnet_run(args.small_apps, args.runs, true);
    eprintln!("kustomize: bosun render versus kubectl kustomize…");
    let overlay = repo().join("examples/kustomize/overlays/prod");
    // Short commands on a noisy machine: alternate them and take the median of pairwise ratios.
    let mut ratios = Vec::new();
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for _ in 0..args.pairs {
        let b = time(Command::new(bosun_binary()).arg("render").arg(&overlay), 1);
        let k = time(Command::new("kubectl").arg("kustomize").arg(&overlay), 1);
        if let (Some(b), Some(k)) = (b, k) {
            ratios.push(b / k);
            ours.push(b);
            theirs.push(k);
        }
    }
    let (bosun, kubectl) =
        if ratios.is_empty() { (None, None) } else { (Some(median(&mut ours)), Some(median(&mut theirs))) };

    println!("| workload | bosun render | alternative | alternative's time | alternative ÷ bosun |");
    println!("|---|---|---|---|---|");
    for (workload, result) in [(args.apps, &large), (args.small_apps, &small)] {
        let label = format!("jsonnet, {} objects", workload * 3);
        println!(
            "| {label} | {} | go-jsonnet | {} | {} |",
            shown(result.bosun),
            shown(result.go),
            ratio(result.go, result.bosun)
        );
        if result.cpp.is_some() || workload == args.small_apps {
            println!(
                "| {label} | {} | C++ jsonnet | {} | {} |",
                shown(result.bosun),
                shown(result.cpp),
                ratio(result.cpp, result.bosun)
            );
        }
    }
    let overhead = if ratios.is_empty() {
        "—".to_string()
    } else {
        format!("{:.2}× (bosun ÷ kubectl, median of 30 pairs)", median(&mut ratios))
    };
    println!(
        "| kustomize overlay (examples/kustomize/overlays/prod) | {} | kubectl kustomize | {} | {overhead} |",
        shown(bosun),
        shown(kubectl)
    );
}
