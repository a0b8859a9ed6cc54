//! OCI artifacts: a package of N objects pushed and pulled by `bosun push|pull artifact`
//! against the floor a script reaches with `tar` and `curl` (the same gzip'd tar, its blobs
//! and manifest uploaded with the Distribution API, then downloaded and unpacked), each run in
//! a fresh repository so that every run uploads everything; and the registry requests the
//! `Package` source makes per unchanged interval (from the registry's access log).

use std::{
    path::Path,
    process::{Command, Stdio},
    time::Instant,
};

use bosun_test_tools::registry::Registry;

use crate::{bosun_binary, median};

/// Arguments of the OCI benchmark.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Objects (ConfigMaps, one file each) in the package.
    #[arg(long, default_value_t = 1000)]
    objects: usize,
    /// Push-and-pull runs of each tool; the median is reported.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Unchanged intervals the source is resolved for.
    #[arg(long, default_value_t = 10)]
    intervals: usize,
}

/// The package: `objects` ConfigMaps in 10 directories.
fn package(dir: &Path, objects: usize) {
    for index in 0..objects {
        let sub = dir.join(format!("apps/app-{}", index % 10));
        std::fs::create_dir_all(&sub).expect("dirs");
        let yaml = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: config-{index}\n  namespace: bench\n  labels:\n    app: app-{}\ndata:\n  index: \"{index}\"\n  setting: value-{index}-{}\n",
            index % 10,
            "x".repeat(64)
        );
        std::fs::write(sub.join(format!("config-{index}.yaml")), yaml).expect("write");
    }
}

/// The `tar` + `curl` push: the layer and an empty config uploaded (POST, then PUT with the
/// digest), then the manifest; and the pull: the manifest, then the layer into `tar`.
const SCRIPT: &str = r#"set -eu
mode=$1 registry=$2 repo=$3 dir=$4 work=$5
if [ "$mode" = push ]; then
  upload() {
    digest=sha256:$(sha256sum "$1" | cut -d' ' -f1)
    location=$(curl -sSf -D - -o /dev/null -X POST "$registry/v2/$repo/blobs/uploads/" | tr -d '\r' | sed -n 's/^[Ll]ocation: //p')
    case $location in *\?*) sep='&' ;; *) sep='?' ;; esac
    curl -sSf -o /dev/null -X PUT -H 'Content-Type: application/octet-stream' --data-binary @"$1" "$location${sep}digest=$digest"
    echo "$digest $(wc -c < "$1")"
  }
  tar czf "$work/layer.tar.gz" -C "$dir" .
  printf '{}' > "$work/config.json"
  set -- $(upload "$work/layer.tar.gz"); layer=$1 layer_size=$2
  set -- $(upload "$work/config.json"); config=$1 config_size=$2
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.cncf.flux.config.v1+json","digest":"%s","size":%s},"layers":[{"mediaType":"application/vnd.cncf.flux.content.v1.tar+gzip","digest":"%s","size":%s}]}' "$config" "$config_size" "$layer" "$layer_size" > "$work/manifest.json"
  curl -sSf -o /dev/null -X PUT -H 'Content-Type: application/vnd.oci.image.manifest.v1+json' --data-binary @"$work/manifest.json" "$registry/v2/$repo/manifests/v1"
else
  layer=$(curl -sSf -H 'Accept: application/vnd.oci.image.manifest.v1+json' "$registry/v2/$repo/manifests/v1" | sed 's/.*"layers":\[{[^}]*"digest":"\([^"]*\)".*/\1/')
  mkdir -p "$dir"
  curl -sSfL "$registry/v2/$repo/blobs/$layer" | tar xzf - -C "$dir"
fi
"#;

/// Seconds `command` took; panics with its stderr when it fails.
fn timed(command: &mut Command) -> f64 {
    let started = Instant::now();
    let output = command.stdout(Stdio::null()).stderr(Stdio::piped()).output().expect("runs");
    assert!(
        output.status.success(),
        "{:?} failed: {}",
        command.get_program(),
        String::from_utf8_lossy(&output.stderr).trim()
    );
    started.elapsed().as_secs_f64()
}

/// Runs the benchmark and prints its table.
pub async fn run(args: Args) {
    let registry = Registry::start(false, None);
    let scratch = tempfile::tempdir().expect("tempdir");
    let dir = scratch.path().join("package");
    package(&dir, args.objects);
    let base = format!("http://{}", registry.host);
    let (mut bosun_push, mut bosun_pull, mut curl_push, mut curl_pull) = (vec![], vec![], vec![], vec![]);
    for run in 0..args.runs {
        let reference = registry.url(&format!("bosun-{run}:v1"));
        bosun_push.push(timed(Command::new(bosun_binary()).args(["push", "artifact", &reference]).arg(&dir)));
        let out = scratch.path().join(format!("bosun-out-{run}"));
        bosun_pull.push(timed(Command::new(bosun_binary()).args(["pull", "artifact", &reference, "-o"]).arg(&out)));
        let work = scratch.path().join(format!("curl-{run}"));
        std::fs::create_dir_all(&work).expect("work");
        let script = |mode: &str, target: &Path| {
            let mut command = Command::new("sh");
            command.args(["-c", SCRIPT, "sh", mode, &base, &format!("curl-{run}")]).arg(target).arg(&work);
            command
        };
        curl_push.push(timed(&mut script("push", &dir)));
        curl_pull.push(timed(&mut script("pull", &work.join("out"))));
    }
    let layer = std::fs::metadata(scratch.path().join("curl-0/layer.tar.gz")).map(|m| m.len()).unwrap_or_default();

    // The Package source, resolved on `intervals` unchanged intervals.
    let fetcher = bosun::source::Fetcher::new(scratch.path().join("cache"));
    let source = bosun_api::package::OciSource {
        url: registry.url("bosun-0"),
        reference: Some(bosun_api::package::OciReference { tag: Some("v1".into()), ..Default::default() }),
        ..Default::default()
    };
    let access = bosun::source::OciAccess::default();
    let first = fetcher.oci(&source, &access, None, false).await.expect("first fetch");
    let before = registry.requests().len();
    let started = Instant::now();
    for _ in 0..args.intervals {
        let again = fetcher.oci(&source, &access, None, false).await.expect("fetch");
        assert_eq!(again.revision, first.revision);
    }
    let per_interval = started.elapsed().as_secs_f64() / args.intervals.max(1) as f64;
    let requests = registry.requests().split_off(before);
    let heads = requests.iter().filter(|r| r.method == "HEAD").count();

    let (bp, bl, cp, cl) =
        (median(&mut bosun_push), median(&mut bosun_pull), median(&mut curl_push), median(&mut curl_pull));
    println!(
        "| {} objects ({} KiB gzip'd), median of {} | bosun | tar + curl | ratio |",
        args.objects,
        layer / 1024,
        args.runs
    );
    println!("|---|---|---|---|");
    println!("| push artifact | {bp:.3} s | {cp:.3} s | {:.2}× |", bp / cp);
    println!("| pull artifact | {bl:.3} s | {cl:.3} s | {:.2}× |", bl / cl);
    println!(
        "| Package source, unchanged interval | {:.1} requests ({:.1} HEAD), {:.1} ms | | |",
        requests.len() as f64 / args.intervals.max(1) as f64,
        heads as f64 / args.intervals.max(1) as f64,
        per_interval * 1000.0
    );
}
