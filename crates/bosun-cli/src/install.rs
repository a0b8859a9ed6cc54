//! `bosun crds` and `bosun install`: print what a real cluster needs, for `kubectl apply -f -`.

use crate::stdout::out;

use std::process::ExitCode;

use bosun_controllers::install::{InstallOptions, crd_manifests, default_image, manifests};

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

    /// Also Flux's CRDs (GitRepository, OCIRepository, HelmRepository, Bucket, Kustomization,
    /// HelmRelease), and the controller reconciles Flux's GitRepositories and Kustomizations
    /// (`bosun controller --flux`; see docs/flux.md).
    #[arg(long)]
    flux: bool,
}

/// Arguments of `bosun crds`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  bosun crds | kubectl apply --server-side -f -\n  bosun crds --flux | kubectl apply --server-side -f -    # and Flux's, on a cluster without Flux"
)]
pub struct CrdsArgs {
    /// Also Flux's CRDs (GitRepository, OCIRepository, HelmRepository, Bucket, Kustomization,
    /// HelmRelease), with every version Flux serves, as Flux's own CRDs define them.
    #[arg(long)]
    flux: bool,
}

fn print(objects: &[serde_json::Value]) {
    out!("{}", bosun_core::yaml::to_stream(objects.iter().map(|object| (None, object))));
}

/// Runs `bosun crds`.
pub fn crds(args: CrdsArgs) -> ExitCode {
    print(&crd_manifests(args.flux));
    ExitCode::SUCCESS
}

fn options_of(args: &Args) -> InstallOptions {
    InstallOptions {
        namespace: args.namespace.clone(),
        image: args.image.clone().unwrap_or_else(default_image),
        concurrency: args.concurrency,
        watch_label_selector: args.watch_label_selector.clone(),
        default_service_account: args.default_service_account.clone(),
        multi_tenant: args.multi_tenant,
        flux: args.flux,
    }
}

/// Runs `bosun install`.
pub fn run(args: Args) -> ExitCode {
    print(&manifests(&options_of(&args)));
    ExitCode::SUCCESS
}
