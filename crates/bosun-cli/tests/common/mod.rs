//! What the command tests share: an embedded API server (in the test process) and a scratch
//! directory holding its kubeconfig. Each test file adds its own methods to [`Cluster`].

use std::path::PathBuf;

use bosun_apiserver::RunningServer;

/// A running embedded API server and a scratch directory with its kubeconfig.
pub struct Cluster {
    /// The server.
    pub server: RunningServer,
    /// Scratch space; the commands run here.
    pub dir: tempfile::TempDir,
    /// `dir/kubeconfig`, pointing at the server.
    pub kubeconfig: PathBuf,
}

impl Cluster {
    /// Wraps a started server, writing its kubeconfig into a new scratch directory.
    pub fn around(server: RunningServer) -> Cluster {
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = dir.path().join("kubeconfig");
        server.write_kubeconfig(&kubeconfig).expect("kubeconfig");
        Cluster { server, dir, kubeconfig }
    }
}
