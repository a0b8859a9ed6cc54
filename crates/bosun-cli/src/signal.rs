//! The signals that stop a long-running command.

/// Completes on Ctrl-C (SIGINT) or SIGTERM (what `kill`, systemd and Kubernetes send), or when
/// stdout's reader has gone (`bosun observe … | head -1`): nothing more can be said then.
pub async fn shutdown() {
    tokio::select! {
        () = signal() => {}
        () = crate::stdout::closed_by_reader() => {}
    }
}

/// Completes on Ctrl-C (SIGINT) or SIGTERM.
async fn signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
}

/// A token canceled on the first [`shutdown`] signal, for work that stops at its next safe
/// point (an apply: no new group or step starts, waits end) and then reports what it did.
/// Dropping it stops listening.
pub struct Interrupt {
    token: tokio_util::sync::CancellationToken,
    listener: tokio::task::JoinHandle<()>,
}

impl Interrupt {
    /// Starts listening for the signals.
    pub fn listen() -> Interrupt {
        let token = tokio_util::sync::CancellationToken::new();
        let canceled = token.clone();
        let listener = tokio::spawn(async move {
            shutdown().await;
            canceled.cancel();
            // A second Ctrl-C does not wait for the safe point.
            signal().await;
            std::process::exit(i32::from(INTERRUPTED_EXIT));
        });
        Interrupt { token, listener }
    }

    /// The token work is canceled through.
    pub fn token(&self) -> tokio_util::sync::CancellationToken {
        self.token.clone()
    }

    /// Whether a signal came.
    pub fn happened(&self) -> bool {
        self.token.is_cancelled()
    }
}

impl Drop for Interrupt {
    fn drop(&mut self) {
        self.listener.abort();
    }
}

/// The exit code after Ctrl-C (128 + SIGINT), as shells report it.
pub const INTERRUPTED_EXIT: u8 = 130;
