//! `bosun crds` and `bosun install`: print what a real cluster needs, for `kubectl apply -f -`.

use crate::stdout::out;

use std::process::ExitCode;

use bosun_controllers::install::{InstallOptions, default_image, manifests};

/// Arguments of `bosun install`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Prints the CRDs, a namespace, a ServiceAccount bound to cluster-admin and a Deployment running\n`bosun controller --leader-elect` with probes, a metrics port (8080) and a source cache.\n\nExample:\n  bosun install | kubectl apply --server-side -f -\n  kubectl -n bosun-system rollout status deployment/bosun-controller"
)]
pub struct Args {
    /// Namespace of the controller.
    #[arg(short = 'n', long, value_name = "NAMESPACE", default_value = "bosun-system")]
    namespace: String,

    /// Container image (default: this version's release image).
    #[arg(long, value_name = "IMAGE")]
    image: Option<String>,

    /// Packages reconciled at once.
    #[arg(long, value_name = "N", default_value_t = 4)]
    concurrency: u16,

    /// Install a shard: only Packages whose labels match (its own Deployment and Lease).
    #[arg(long, value_name = "SELECTOR")]
    watch_label_selector: Option<String>,

    /// Apply as this ServiceAccount (of each Package's namespace) when a Package names none.
    #[arg(long, value_name = "NAME")]
    default_service_account: Option<String>,

    /// Lock tenants down as Flux's multi-tenancy lockdown does: cross-namespace references
    /// refused (--no-cross-namespace-refs) and Packages naming no ServiceAccount applied as
    /// `default` of their namespace (unless --default-service-account names another). Exec
    /// renderers, remote bases and local sources are off in every installation.
    #[arg(long)]
    multi_tenant: bool,
}

fn print(objects: &[serde_json::Value]) {
    out!("{}", bosun_core::yaml::to_stream(objects.iter().map(|object| (None, object))));
}

/// Runs `bosun crds`.
pub fn crds() -> ExitCode {
    let objects: Vec<serde_json::Value> =
        manifests(&options_of(None)).into_iter().filter(|o| o["kind"] == "CustomResourceDefinition").collect();
    print(&objects);
    ExitCode::SUCCESS
}

fn options_of(args: Option<&Args>) -> InstallOptions {
    InstallOptions {
        namespace: args.map_or_else(|| "bosun-system".to_string(), |a| a.namespace.clone()),
        image: args.and_then(|a| a.image.clone()).unwrap_or_else(default_image),
        concurrency: args.map_or(4, |a| a.concurrency),
        watch_label_selector: args.and_then(|a| a.watch_label_selector.clone()),
        default_service_account: args.and_then(|a| a.default_service_account.clone()),
        multi_tenant: args.is_some_and(|a| a.multi_tenant),
    }
}

/// Runs `bosun install`.
pub fn run(args: Args) -> ExitCode {
    print(&manifests(&options_of(Some(&args))));
    ExitCode::SUCCESS
}
