//! `bosun crds` and `bosun install`: print what a real cluster needs, for `kubectl apply -f -`.

use crate::stdout::out;

use std::process::ExitCode;

use bosun_controllers::install::{InstallOptions, crd_manifests, default_image, manifests};
use bosun_controllers::shard;

/// Arguments of `bosun install`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Prints the CRDs, a namespace, a ServiceAccount bound to cluster-admin and a Deployment running\n`bosun controller --leader-elect` with probes, a metrics port (8080) and a source cache.\n\nWith --shards N, N more Deployments bosun-controller-shard-0 … shard-(N-1), each running\n`bosun controller --leader-elect --shard shard-I`: label an object `bosun.dev/shard: shard-I` for\nshard I to reconcile it (objects without the label stay with bosun-controller). Scale a\nDeployment to 2 replicas for a standby. See docs/controller.md, Sharding.\n\nExamples:\n  bosun install | kubectl apply --server-side -f -\n  kubectl -n bosun-system rollout status deployment/bosun-controller\n  bosun install --shards 3 | kubectl apply --server-side -f -\n  kubectl label package web bosun.dev/shard=shard-1 --overwrite"
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

    /// Shard controllers to install beside the unsharded one (`--shard shard-0` … `shard-(N-1)`).
    #[arg(long, value_name = "N", default_value_t = 0)]
    shards: u16,

    /// Only Packages whose labels match too (an installation of its own: its own Deployments
    /// and Leases, named with a hash of the selector).
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

    /// Also Argo CD's CRDs (Application, AppProject), and the controller reconciles
    /// Applications (`bosun controller --argo`; see docs/argocd.md).
    #[arg(long)]
    argo: bool,
}

/// Arguments of `bosun crds`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  bosun crds | kubectl apply --server-side -f -\n  bosun crds --flux | kubectl apply --server-side -f -    # and Flux's, on a cluster without Flux\n  bosun crds --argo | kubectl apply --server-side -f -    # and Argo CD's Application, AppProject"
)]
pub struct CrdsArgs {
    /// Also Flux's CRDs (GitRepository, OCIRepository, HelmRepository, Bucket, Kustomization,
    /// HelmRelease), with every version Flux serves, as Flux's own CRDs define them.
    #[arg(long)]
    flux: bool,
    /// Also Argo CD's CRDs (Application, AppProject), as Argo CD's own CRDs name them.
    #[arg(long)]
    argo: bool,
}

fn print(objects: &[serde_json::Value]) {
    out!("{}", bosun_core::yaml::to_stream(objects.iter().map(|object| (None, object))));
}

/// Runs `bosun crds`.
pub fn crds(args: CrdsArgs) -> ExitCode {
    print(&crd_manifests(args.flux, args.argo));
    ExitCode::SUCCESS
}

fn options_of(args: &Args) -> InstallOptions {
    InstallOptions {
        namespace: args.namespace.clone(),
        image: args.image.clone().unwrap_or_else(default_image),
        concurrency: args.concurrency,
        watch_label_selector: args.watch_label_selector.clone(),
        shards: args.shards,
        default_service_account: args.default_service_account.clone(),
        multi_tenant: args.multi_tenant,
        flux: args.flux,
        argo: args.argo,
    }
}

/// Runs `bosun install`.
pub fn run(args: Args) -> ExitCode {
    if let Err(error) = shard::check(None, &[("--watch-label-selector", args.watch_label_selector.as_deref())]) {
        return crate::bad_input(error);
    }
    print(&manifests(&options_of(&args)));
    ExitCode::SUCCESS
}
