//! Every benchmark runs once with tiny sizes, so a broken harness (a panic, a child left running,
//! a table that is not printed) cannot land. The figures themselves are not checked: they come
//! from full-size runs on a quiet machine (docs/benchmarks.md).

use std::{path::PathBuf, process::Command};

/// Runs `bosun-bench ARGS` and returns its stdout, failing with its stderr.
fn bench(args: &[&str]) -> String {
    let bench = PathBuf::from(env!("CARGO_BIN_EXE_bosun-bench"));
    assert!(
        bench.with_file_name("bosun").is_file(),
        "the benchmarks run the bosun binary: build it first (`cargo test --workspace` does)"
    );
    let output = Command::new(&bench).args(args).output().expect("run bosun-bench");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "bosun-bench {args:?} failed:\n{}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The Markdown table: a header, the separator and at least `rows` rows.
fn assert_table(stdout: &str, rows: usize) {
    let lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with('|')).collect();
    assert!(lines.len() >= rows + 2, "expected a table with {rows} rows, got:\n{stdout}");
    assert!(lines[1].starts_with("|---"), "{stdout}");
}

#[test]
fn apiserver_benchmark_runs() {
    let out = bench(&[
        "apiserver",
        "--creates",
        "40",
        "--clients",
        "2",
        "--list-objects",
        "20",
        "--lists",
        "2",
        "--watchers",
        "2",
        "--events",
        "5",
        "--bindings",
        "3",
        "--rbac-rounds",
        "1",
    ]);
    assert_table(&out, 3);
    assert!(out.contains("RBAC off"), "{out}");
}

#[test]
fn render_benchmark_runs() {
    let out = bench(&["render", "--apps", "3", "--small-apps", "2", "--runs", "1", "--pairs", "1"]);
    assert_table(&out, 3);
}

#[test]
fn helm_render_benchmark_runs() {
    let out = bench(&["render", "--helm", "--templates", "3", "--runs", "1"]);
    assert_table(&out, 2);
    assert!(out.contains("helm template") && out.contains("--jsonnet"), "{out}");
}

#[test]
fn apply_benchmark_runs() {
    let out = bench(&["apply", "--objects", "6", "--runs", "1"]);
    assert_table(&out, 3);
}

#[test]
fn apply_benchmark_quick_leaves_out_the_validating_kubectl_runs() {
    let out = bench(&["apply", "--objects", "6", "--runs", "1", "--quick"]);
    assert_table(&out, 3);
    let header = out.lines().find(|line| line.starts_with("| 6 objects")).expect("the table's header");
    assert_eq!(
        header,
        "| 6 objects | bosun apply | kubectl apply --validate=false | kubectl apply --server-side --validate=false |"
    );
}

#[test]
fn fleet_benchmark_runs() {
    let out = bench(&["fleet", "--clusters", "2", "--packages", "2", "--concurrency", "4"]);
    assert_table(&out, 3);
    assert!(out.contains("watches per cluster"), "{out}");
}

#[test]
fn observe_benchmark_runs() {
    let out = bench(&["observe", "--objects", "5", "--writes", "3", "--burst", "3", "--memory-objects", "5"]);
    assert_table(&out, 5);
}

#[test]
fn packages_benchmark_runs() {
    let out = bench(&["packages", "--packages", "3", "--concurrency", "2", "--interval", "2s"]);
    assert_table(&out, 6);
    let sharded = bench(&["packages", "--packages", "4", "--concurrency", "2", "--interval", "2s", "--shards", "2"]);
    assert_table(&sharded, 6);
    assert!(sharded.contains("2 shard controllers") && sharded.contains("CPU per Package: controllers"), "{sharded}");
}

#[test]
fn operator_benchmark_runs() {
    let out = bench(&["operator", "--objects", "5", "--changes", "3", "--concurrency", "2"]);
    assert_table(&out, 4);
}

#[test]
fn ui_benchmark_runs() {
    let out = bench(&["ui", "--packages", "20", "--loads", "2"]);
    assert_table(&out, 5);
    assert!(out.contains("overview page, server time"), "{out}");
}

#[test]
fn oci_benchmark_runs() {
    let out = bench(&["oci", "--objects", "20", "--runs", "1", "--intervals", "2"]);
    assert_table(&out, 3);
    assert!(out.contains("1.0 requests (1.0 HEAD)"), "one manifest HEAD per unchanged interval: {out}");
}
