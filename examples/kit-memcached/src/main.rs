//! `kit-memcached`: runs the memcached operator against the cluster of the kubeconfig (or the
//! in-cluster account). `kit-memcached crd` prints the CustomResourceDefinition to apply first.

use std::{net::SocketAddr, process::ExitCode};

use kit_memcached::Memcached;
use kube::CustomResourceExt;

const USAGE: &str = "usage: kit-memcached [crd]\n  (no argument)  run the operator (kubeconfig or in-cluster); metrics on http://127.0.0.1:8080/metrics\n  crd            print the CustomResourceDefinition to apply first";

#[tokio::main]
async fn main() -> ExitCode {
    // The operator's own logs by default (RUST_LOG overrides), on stderr, coloured on a terminal.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("kit_memcached=info,bosun=info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("crd") => {
            println!("{}", serde_json::to_string_pretty(&Memcached::crd()).expect("the CRD serializes"));
            return ExitCode::SUCCESS;
        }
        Some("--help" | "-h") => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Some(other) => {
            eprintln!("error: unknown argument {other:?}\n{USAGE}");
            return ExitCode::from(2);
        }
        None => {}
    }
    let client = match kube::Client::try_default().await {
        Ok(client) => client,
        Err(error) => {
            eprintln!("error: cannot connect to the cluster: {error}");
            return ExitCode::from(2);
        }
    };
    let controller = kit_memcached::controller(client);
    let address: SocketAddr = ([127, 0, 0, 1], 8080).into();
    match bosun_kit::serve(controller.metrics(), address).await {
        Ok((bound, _task)) => eprintln!("metrics on http://{bound}/metrics, health on /healthz and /readyz"),
        Err(error) => eprintln!("warning: cannot serve metrics on {address}: {error}"),
    }
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    match controller.run(shutdown).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {}", bosun_core::cluster::ClusterError::from(error));
            ExitCode::from(2)
        }
    }
}
