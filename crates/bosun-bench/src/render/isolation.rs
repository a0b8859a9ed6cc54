//! The cost of rendering in a worker process (as `bosun controller` renders tenants' packages,
//! see `bosun::render::worker`) against rendering in process, for the same package: the large
//! jsonnet program, and a package of one manifest file (the worker's fixed cost: starting the
//! binary, sending the request, reading the answer back).

use std::{collections::BTreeMap, path::Path, time::Instant};

use serde_json::{Value, json};

use bosun::{
    package::Package,
    render::{self, Input, Sandbox, Worker, WorkerLimits},
};
use bosun_core::scopes::Scopes;

use crate::{bosun_binary, median};

/// Median seconds of `runs` renders of `package`, in process or (with `worker`) in a worker.
fn time(package: &Package, config: &Value, root: &Path, worker: Option<&Worker>, runs: usize) -> f64 {
    let sandbox = Sandbox::new(root);
    let extra = BTreeMap::new();
    let input = Input { config, extra: &extra, allow_empty: false, keys: None, helm: None, sandbox: Some(&sandbox) };
    let scopes = Scopes::builtin();
    let mut samples = Vec::new();
    for _ in 0..runs {
        let started = Instant::now();
        let rendered = match worker {
            Some(worker) => render::worker::render(worker, package, &input, &scopes, Some("default")),
            None => render::render_with(package, &input, &scopes),
        };
        let rendered = rendered.unwrap_or_else(|e| panic!("{}: {e}", package.dir.display()));
        assert!(!rendered.manifests.is_empty());
        samples.push(started.elapsed().as_secs_f64());
    }
    median(&mut samples)
}

/// One table row per package: in process, in a worker, and the ratio.
pub fn rows(repo: &Path, apps: usize, runs: usize) -> Vec<String> {
    let worker = Worker::new(bosun_binary(), WorkerLimits::default());
    let scratch = tempfile::tempdir().expect("tempdir");
    let one = scratch.path().join("one");
    std::fs::create_dir_all(&one).expect("mkdir");
    let manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\ndata:\n  a: \"1\"\n";
    std::fs::write(one.join("configmap.yaml"), manifest).expect("write");
    let large = repo.join("crates/bosun-bench/fixtures/large-jsonnet");
    let cases = [
        (format!("jsonnet, {} objects", apps * 3), large, json!({"apps": apps})),
        ("one manifest file".to_string(), one, json!({})),
    ];
    let mut rows = Vec::new();
    for (label, dir, config) in cases {
        eprintln!("render isolation: {label}, in process and in a worker…");
        let package = Package::load(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let root = dir.canonicalize().expect("package dir");
        let package = Package { dir: root.clone(), ..package };
        let in_process = time(&package, &config, &root, None, runs);
        let isolated = time(&package, &config, &root, Some(&worker), runs);
        rows.push(format!(
            "| {label}, in process (library) | {:.2} ms | in a render worker (`bosun controller`) | {:.2} ms | {:.2}× |",
            in_process * 1e3,
            isolated * 1e3,
            isolated / in_process
        ));
    }
    rows
}
