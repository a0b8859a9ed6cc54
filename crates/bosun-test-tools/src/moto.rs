//! moto's S3 server (`moto_server`, from PyPI) on a free loopback port, for the bucket source
//! tests, stopped when dropped; and a bucket on it written to as a user's tooling would (S3
//! requests signed by `rusty-s3`).

use std::{
    net::TcpListener,
    process::{Child, Command, Stdio},
    time::Duration,
};

use rusty_s3::{Bucket, Credentials, S3Action, UrlStyle};

/// The access key the tests sign with (moto takes any).
pub const ACCESS_KEY: &str = "AKIDTEST";
/// Its secret key.
pub const SECRET_KEY: &str = "secret-test-key";
/// How long a signed request stays valid.
const SIGNED_FOR: Duration = Duration::from_secs(60);

/// A running moto server.
pub struct Moto {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub host: String,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// Holds its log while it runs.
    _log_dir: tempfile::TempDir,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Moto {
    /// Starts one, and waits until it listens.
    pub fn start() -> Moto {
        let port = TcpListener::bind("127.0.0.1:0").expect("port").local_addr().expect("addr").port();
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("moto.log");
        let mut child = Command::new(crate::require("moto_server"))
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log"))
            .spawn()
            .expect("moto_server starts");
        let host = format!("127.0.0.1:{port}");
        crate::wait_listening(&mut child, &host, "moto_server", &log);
        Moto { child, base: format!("http://{host}"), host, _log_dir: dir }
    }
}

/// A bucket on moto.
pub struct Store {
    bucket: Bucket,
    keys: Credentials,
    http: reqwest::Client,
}

impl Store {
    /// Creates bucket `name`.
    pub async fn create(moto: &Moto, name: &str) -> Store {
        let bucket = Bucket::new(moto.base.parse().expect("url"), UrlStyle::Path, name.to_string(), "us-east-1")
            .expect("bucket");
        let store = Store { bucket, keys: Credentials::new(ACCESS_KEY, SECRET_KEY), http: reqwest::Client::new() };
        let url = store.bucket.create_bucket(&store.keys).sign(SIGNED_FOR);
        let response = store.http.put(url).header("content-length", "0").send().await.expect("create bucket");
        assert!(response.status().is_success(), "{:?}", response.text().await);
        store
    }

    /// Writes object `key`.
    pub async fn put(&self, key: &str, text: &str) {
        let url = self.bucket.put_object(Some(&self.keys), key).sign(SIGNED_FOR);
        let response = self.http.put(url).body(text.to_string()).send().await.expect("put");
        assert!(response.status().is_success(), "{:?}", response.text().await);
    }

    /// Deletes object `key`.
    pub async fn delete(&self, key: &str) {
        let url = self.bucket.delete_object(Some(&self.keys), key).sign(SIGNED_FOR);
        let response = self.http.delete(url).send().await.expect("delete");
        assert!(response.status().is_success(), "{:?}", response.text().await);
    }
}
