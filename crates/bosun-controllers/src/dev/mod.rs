//! What `bosun dev` runs of the controllers beside its embedded API server, once bosun's CRDs
//! are installed there (as [`FIELD_MANAGER`]): the Canary controller ([`CanaryController`]: a
//! `Canary` in a package rolls out as it would under `bosun controller`), or all of `bosun
//! controller`'s controllers ([`Controllers`], for `--gitops`, `--clusters` and, with Flux's
//! kinds, `--flux`); for `--gitops`, the repository they deliver from ([`gitops`]); for
//! `--clusters`, a fleet on a workstation ([`fleet`]); and for `--flux`, a Flux repository's
//! cluster path bootstrapped and served from its working tree ([`flux`]).

pub mod fleet;
pub mod flux;
pub mod gitops;

use std::path::PathBuf;

use tokio::{sync::oneshot, task::JoinHandle};

use crate::{HostError, HostSettings, Tenancy, package};

/// The field manager `bosun dev` writes with.
pub const FIELD_MANAGER: &str = "bosun-dev";

/// The Canary controller running beside the packages `bosun dev` applies.
pub struct CanaryController {
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl CanaryController {
    /// Starts the Canary controller.
    pub fn start(client: &kube::Client) -> CanaryController {
        let controller = crate::canary::controller::controller(client.clone(), Default::default());
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let stopped = async move {
                let _ = stopped.await;
            };
            if let Err(error) = controller.run(stopped).await {
                tracing::warn!(%error, "the Canary controller stopped");
            }
        });
        CanaryController { stop, task }
    }

    /// Stops the controller and waits until it has: before the server goes, so its watches
    /// do not see the server vanish.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
    }
}

/// `bosun controller`'s controllers (Packages, Fleets, Operators, Canaries, notifications) in
/// this process, as on the user's own machine: Packages may read local directories and run
/// commands ([`Tenancy::own_machine`]). Dropped, they stop without being waited for.
pub struct Controllers {
    stop: oneshot::Sender<()>,
    task: JoinHandle<Result<(), HostError>>,
}

impl Controllers {
    /// Starts the controllers with `client` (made from `config`); sources are fetched into
    /// `cache`.
    pub fn start(client: &kube::Client, config: kube::Config, cache: PathBuf) -> Controllers {
        Controllers::spawn(client, HostSettings::new(own_machine(config, cache)))
    }

    /// Starts the controllers with Flux's kinds too (`bosun controller --flux`; Flux's CRDs
    /// must be installed), the Git repositories of `trees` read from their working trees and
    /// source URLs rewritten by `mirrors`.
    pub fn start_flux(
        client: &kube::Client,
        config: kube::Config,
        cache: PathBuf,
        trees: bosun::source::WorkingTrees,
        mirrors: bosun::source::SourceMirrors,
    ) -> Controllers {
        let package = package::Settings { working_trees: trees, source_mirrors: mirrors, ..own_machine(config, cache) };
        let settings = HostSettings { flux: Some(crate::flux::Scope::default()), ..HostSettings::new(package) };
        Controllers::spawn(client, settings)
    }

    fn spawn(client: &kube::Client, settings: HostSettings) -> Controllers {
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(crate::run(
            client.clone(),
            settings,
            async move {
                let _ = stopped.await;
            },
            |_| {},
        ));
        Controllers { stop, task }
    }

    /// Stops the controllers and waits until they have.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
    }
}

/// The Package controller's settings on the user's own machine.
fn own_machine(config: kube::Config, cache: PathBuf) -> package::Settings {
    package::Settings { tenancy: Tenancy::own_machine(), ..package::Settings::new(config, cache) }
}
