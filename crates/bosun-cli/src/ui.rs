//! `bosun ui`: the web dashboard, as the kubeconfig's user on loopback (like k9s or Headlamp's
//! desktop app), or with sign-in for others (`--sign-in`, with TLS or behind a TLS proxy).

use crate::stdout::outln;

use std::{net::SocketAddr, path::PathBuf, process::ExitCode};

use bosun_ui::{Authentication, Transport, Ui, UiSettings};

use crate::cluster::ClusterArgs;

/// Arguments of `bosun ui`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Every request is made with your kubeconfig's credentials (or, with --sign-in, each person's token),\nso RBAC decides what the dashboard shows and which buttons work. See docs/ui.md.\n\nExamples:\n  bosun ui --open\n  bosun ui --context prod --addr 127.0.0.1:9000\n  bosun ui --sign-in --addr 0.0.0.0:8443 --tls-cert tls.crt --tls-key tls.key"
)]
pub struct Args {
    #[command(flatten)]
    cluster: ClusterArgs,

    #[command(flatten)]
    serve: ServeArgs,

    /// Open the dashboard in the browser ($BROWSER, else xdg-open; open on macOS).
    #[arg(long)]
    open: bool,

    /// Each person signs in with their own bearer token (or an authenticating proxy's
    /// `Authorization` header) instead of acting as the kubeconfig's user.
    #[arg(long)]
    sign_in: bool,
}

/// Where and how the dashboard is served (`bosun ui`; `bosun controller --ui-addr` has the same
/// flags with a `ui-` prefix).
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// Listen here. Off loopback only with TLS (or --behind-tls-proxy) and sign-in.
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:8090")]
    pub addr: SocketAddr,

    /// Serve HTTPS with this certificate chain (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,

    /// The certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,

    /// A proxy in front terminates TLS (plain HTTP here; cookies still `Secure`).
    #[arg(long, conflicts_with = "tls_cert")]
    pub behind_tls_proxy: bool,
}

impl ServeArgs {
    /// How browsers reach it.
    pub fn transport(&self) -> Transport {
        match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => Transport::Tls { cert: cert.clone(), key: key.clone() },
            _ if self.behind_tls_proxy => Transport::BehindTlsProxy,
            _ => Transport::Plain,
        }
    }
}

/// A kubeconfig's configuration for sign-in: where the API server is and which authority to
/// trust, without its credentials (never used for a person).
pub fn without_credentials(config: &kube::Config) -> Box<kube::Config> {
    let mut config = Box::new(config.clone());
    config.auth_info = Default::default();
    config
}

/// Opens `url` in the desktop's browser: `$BROWSER` when set (its first entry, with any
/// arguments, as `gh` and Python's `webbrowser` read it), else `xdg-open` (`open` on macOS).
fn open(url: &str) {
    let browser = std::env::var("BROWSER").unwrap_or_default();
    let mut words = browser.split(':').next().unwrap_or_default().split_whitespace();
    let default = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
    let command = words.next().unwrap_or(default);
    let spawned = std::process::Command::new(command)
        .args(words)
        .arg(url)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    match spawned {
        // Reaped in the background: the browser may outlive the dashboard.
        Ok(mut child) => drop(std::thread::spawn(move || child.wait())),
        Err(error) => eprintln!("warning: cannot open a browser ({command}: {error}); open {url} yourself"),
    }
}

/// Runs `bosun ui`.
pub async fn run(args: Args) -> ExitCode {
    let connection = match args.cluster.connect().await {
        Ok(connection) => connection,
        Err(message) => return crate::bad_input(message),
    };
    let authentication = match args.sign_in {
        true => Authentication::Token(without_credentials(&connection.config)),
        false => {
            let user = args.cluster.context.clone().unwrap_or_else(|| "your kubeconfig's user".to_string());
            Authentication::Kubeconfig { client: connection.client.clone(), user }
        }
    };
    let settings = UiSettings { address: args.serve.addr, authentication, transport: args.serve.transport() };
    let ui = match Ui::bind(settings).await {
        Ok(ui) => ui,
        Err(error) => return crate::bad_input(error),
    };
    let url = ui.url();
    outln!("bosun ui: {url} (cluster {}); Ctrl-C to stop", connection.url);
    if args.open {
        open(&url);
    }
    ui.run(crate::signal::shutdown()).await;
    ExitCode::SUCCESS
}
