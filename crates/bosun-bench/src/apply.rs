//! Applying a package of 1,000 objects (ConfigMaps, Deployments, Services) to the embedded API
//! server: `bosun apply` beside `kubectl apply -f` (client-side) and `kubectl apply
//! --server-side -f`, each into its own namespace of one server, interleaved run by run. Each
//! tool applies twice: the first apply creates everything, the second finds nothing to change.
//! Reported: wall time (median), HTTP requests per object and writes as the server counted them,
//! and the client's peak memory (from GNU time, when `/usr/bin/time` is installed).

use std::{
    fmt::Write as _,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Instant,
};

use bosun_apiserver::{ApiServer, RunningServer};
use k8s_openapi::api::core::v1::Namespace;
use kube::{
    Api,
    api::{ObjectMeta, PostParams},
};

use crate::{bosun_binary, median};

/// Arguments of the apply benchmark.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Objects in the package (ConfigMaps, Deployments and Services in turn).
    #[arg(long, default_value_t = 1000)]
    objects: usize,
    /// Runs of each tool (a fresh namespace each); medians are reported.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Leave out the two kubectl runs with kubectl's default validation: they take 20 s or more
    /// each and measure kubectl reading OpenAPI documents, not the apply. bosun is still
    /// measured against `kubectl apply --server-side --validate=false` and client-side
    /// `kubectl apply --validate=false`.
    #[arg(long)]
    quick: bool,
}

impl Args {
    /// The tools this run measures, bosun first.
    fn tools(&self) -> Vec<Tool> {
        let validating = |tool: &Tool| matches!(tool, Tool::Kubectl { validate: true, .. });
        Tool::ALL.into_iter().filter(|tool| !(self.quick && validating(tool))).collect()
    }
}

/// A tool applying the package: bosun, or kubectl client- or server-side, with its default
/// validation or without (`--validate=false`, which skips reading the OpenAPI documents).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tool {
    Bosun,
    Kubectl { server_side: bool, validate: bool },
}

impl Tool {
    const ALL: [Tool; 5] = [
        Tool::Bosun,
        Tool::Kubectl { server_side: false, validate: true },
        Tool::Kubectl { server_side: false, validate: false },
        Tool::Kubectl { server_side: true, validate: true },
        Tool::Kubectl { server_side: true, validate: false },
    ];

    fn label(self) -> String {
        match self {
            Tool::Bosun => "bosun apply".into(),
            Tool::Kubectl { server_side, validate } => format!(
                "kubectl apply{}{}",
                if server_side { " --server-side" } else { "" },
                if validate { "" } else { " --validate=false" }
            ),
        }
    }

    fn slug(self) -> String {
        self.label().replace("kubectl apply", "kubectl").replace(" --", "-").replace(['=', ' '], "-")
    }

    /// The command applying `package`, as a user would type it.
    fn command(self, package: &Path, kubeconfig: &Path) -> Command {
        let mut command = match self {
            Tool::Bosun => {
                let mut command = Command::new(bosun_binary());
                command.arg("apply").arg(package);
                command
            }
            Tool::Kubectl { server_side, validate } => {
                let mut command = Command::new("kubectl");
                command.args(["apply", "-f"]).arg(package);
                if server_side {
                    command.args(["--server-side", "--field-manager=bench"]);
                }
                if !validate {
                    command.arg("--validate=false");
                }
                command
            }
        };
        command.arg("--kubeconfig").arg(kubeconfig);
        command
    }
}

/// One apply as the server and the operating system saw it.
#[derive(Debug, Clone, Copy, Default)]
struct Sample {
    seconds: f64,
    requests: u64,
    writes: u64,
    peak_kib: Option<u64>,
}

/// A tool's samples: (first applies, re-applies).
type Runs = (Vec<Sample>, Vec<Sample>);

/// A table row: its label and how to compute a tool's cell.
type Row<'a> = (&'a str, &'a dyn Fn(&Runs) -> String);

/// The package: `objects` objects in `namespace`, one file per app as users keep them.
fn write_package(dir: &Path, namespace: &str, objects: usize) {
    std::fs::create_dir_all(dir).expect("package directory");
    let apps = objects.div_ceil(3);
    for app in 0..apps {
        let name = format!("app-{app:04}");
        let mut file = String::new();
        let kinds = (objects - app * 3).min(3);
        if kinds > 0 {
            write!(file, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {namespace}\n  labels: {{app: {name}}}\ndata:\n").unwrap();
            for key in 0..10 {
                writeln!(file, "  key-{key}: \"value {key} of {name}, padded to a typical size\"").unwrap();
            }
        }
        if kinds > 1 {
            write!(file, "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  namespace: {namespace}\n  labels: {{app: {name}}}\nspec:\n  replicas: 2\n  selector:\n    matchLabels: {{app: {name}}}\n  template:\n    metadata:\n      labels: {{app: {name}}}\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.27\n        ports:\n        - containerPort: 80\n        envFrom:\n        - configMapRef: {{name: {name}}}\n        resources:\n          requests: {{cpu: 10m, memory: 32Mi}}\n").unwrap();
        }
        if kinds > 2 {
            write!(file, "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\n  namespace: {namespace}\n  labels: {{app: {name}}}\nspec:\n  selector: {{app: {name}}}\n  ports:\n  - port: 80\n    targetPort: 80\n").unwrap();
        }
        std::fs::write(dir.join(format!("{name}.yaml")), file).expect("manifest");
    }
}

/// Runs `command` under GNU time when available (for the peak memory), counting the server's
/// requests and writes meanwhile. Panics with the tool's stderr if it fails: a failed apply has
/// no meaningful time.
fn measure(server: &RunningServer, command: Command, gnu_time: bool, scratch: &Path) -> Sample {
    let peak_file = scratch.join("peak");
    let mut command = if gnu_time {
        let mut wrapped = Command::new("/usr/bin/time");
        wrapped.args(["-f", "%M", "-o"]).arg(&peak_file).arg(command.get_program()).args(command.get_args());
        wrapped
    } else {
        command
    };
    let (requests, revision) = (server.requests(), server.revision());
    let started = Instant::now();
    let output = command.stdout(Stdio::null()).stderr(Stdio::piped()).output().expect("run the tool");
    let seconds = started.elapsed().as_secs_f64();
    assert!(
        output.status.success(),
        "{:?} failed: {}",
        command.get_args().collect::<Vec<_>>(),
        String::from_utf8_lossy(&output.stderr)
    );
    let peak_kib = gnu_time.then(|| std::fs::read_to_string(&peak_file).ok()?.trim().parse().ok()).flatten();
    Sample { seconds, requests: server.requests() - requests, writes: server.revision() - revision, peak_kib }
}

fn median_of(samples: &[Sample], field: impl Fn(&Sample) -> f64) -> f64 {
    let mut values: Vec<f64> = samples.iter().map(field).collect();
    median(&mut values)
}

/// Runs the apply benchmark and prints the Markdown tables.
pub async fn run(args: Args) {
    let scratch = tempfile::tempdir().expect("tempdir");
    let server = ApiServer::data_dir(scratch.path().join("apiserver")).start().await.expect("server");
    let kubeconfig = scratch.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let gnu_time = Path::new("/usr/bin/time").is_file();
    if !gnu_time {
        eprintln!("/usr/bin/time not found (Debian package `time`): peak memory not measured");
    }
    let namespaces: Api<Namespace> = Api::all(server.client());
    // samples[tool] = (first applies, re-applies)
    let tools = args.tools();
    let mut samples: Vec<Runs> = vec![Default::default(); tools.len()];
    for run in 0..args.runs {
        for (index, &tool) in tools.iter().enumerate() {
            let namespace = format!("{}-{run}", tool.slug());
            let meta = ObjectMeta { name: Some(namespace.clone()), ..Default::default() };
            namespaces
                .create(&PostParams::default(), &Namespace { metadata: meta, ..Default::default() })
                .await
                .expect("namespace");
            let package: PathBuf = scratch.path().join(&namespace);
            write_package(&package, &namespace, args.objects);
            eprintln!("run {}/{}: {} ({} objects)…", run + 1, args.runs, tool.label(), args.objects);
            let blocking_server = &server;
            let first = tokio::task::block_in_place(|| {
                measure(blocking_server, tool.command(&package, &kubeconfig), gnu_time, scratch.path())
            });
            let again = tokio::task::block_in_place(|| {
                measure(blocking_server, tool.command(&package, &kubeconfig), gnu_time, scratch.path())
            });
            samples[index].0.push(first);
            samples[index].1.push(again);
        }
    }
    print_tables(&args, &samples);
}

/// The largest peak memory among the samples.
fn peak(samples: &[Sample]) -> String {
    samples
        .iter()
        .filter_map(|x| x.peak_kib)
        .max()
        .map_or_else(|| "—".to_string(), |kib| format!("{:.0} MiB", kib as f64 / 1024.0))
}

fn print_tables(args: &Args, samples: &[Runs]) {
    let per_object = |sample: &Sample| sample.requests as f64 / args.objects as f64;
    let tools = args.tools();
    let bosun = &samples[0];
    let labels: Vec<String> = tools.iter().map(|tool| tool.label()).collect();
    println!("| {} objects | {} |", args.objects, labels.join(" | "));
    println!("|---|{}", "---|".repeat(tools.len()));
    let rows: [Row; 7] = [
        ("first apply, median", &|s| format!("{:.2} s", median_of(&s.0, |x| x.seconds))),
        ("unchanged re-apply, median", &|s| format!("{:.2} s", median_of(&s.1, |x| x.seconds))),
        ("HTTP requests per object, first apply", &|s| format!("{:.2}", median_of(&s.0, per_object))),
        ("HTTP requests per object, re-apply", &|s| format!("{:.2}", median_of(&s.1, per_object))),
        ("writes on re-apply", &|s| format!("{}", median_of(&s.1, |x| x.writes as f64))),
        ("peak memory (max RSS), first apply", &|s| peak(&s.0)),
        ("peak memory (max RSS), re-apply", &|s| peak(&s.1)),
    ];
    for (label, cell) in rows {
        println!("| {label} | {} |", samples.iter().map(cell).collect::<Vec<_>>().join(" | "));
    }
    println!();
    println!("| tool | first apply: tool ÷ bosun | unchanged re-apply: tool ÷ bosun |");
    println!("|---|---|---|");
    let bosun_first = median_of(&bosun.0, |x| x.seconds);
    let bosun_again = median_of(&bosun.1, |x| x.seconds);
    for (tool, sample) in tools.into_iter().zip(samples).skip(1) {
        println!(
            "| {} | {:.1}× | {:.1}× |",
            tool.label(),
            median_of(&sample.0, |x| x.seconds) / bosun_first,
            median_of(&sample.1, |x| x.seconds) / bosun_again
        );
    }
}
