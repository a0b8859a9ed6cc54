//! Artifacts, charts and signatures against a real registry (Debian's `docker-registry`).

mod support;

use std::{collections::BTreeMap, sync::Arc};

use bosun_oci::{
    Client, ClientOptions, CredentialSource, DockerConfig, Error, PullOptions, PushOptions, RegistryCredentials,
    RegistryError, Select, WantedChartVersion,
    archive::keep_all,
    cosign::{SignatureError, SigningKey, Verify},
    manifest::{
        FLUX_CONFIG, FLUX_CONTENT, HELM_CHART_CONTENT, HELM_CONFIG, LayerOperation, LayerSelector, OCI_MANIFEST,
    },
};
use support::{Auth, Registry, RegistryExt, TokenService, files, write_files};

const USER: &str = "ci";
const PASSWORD: &str = "s3cret-pass";

fn basic() -> RegistryCredentials {
    RegistryCredentials::Basic { username: USER.into(), password: PASSWORD.into() }
}

fn fixed_time(text: &str) -> PushOptions {
    PushOptions { created: Some(text.parse().expect("time")), ..PushOptions::default() }
}

fn manifests_dir(version: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    write_files(
        dir.path(),
        &[
            ("apps/web/deployment.yaml", &format!("kind: Deployment\nimage: web:{version}\n")),
            ("apps/web/service.yaml", "kind: Service\n"),
            ("kustomization.yaml", "resources: [apps/web]\n"),
        ],
    );
    dir
}

fn semver(range: &str) -> Select {
    Select::Semver { range: Arc::new(bosun_semver::Constraints::parse(range).expect("range")), filter: None }
}

#[tokio::test]
async fn push_list_tag_and_pull_round_trip_over_tls_with_basic_auth() {
    let registry = Registry::start(true, Some((USER, PASSWORD)));
    let client = registry.client(basic());
    let source = manifests_dir("1.0");
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(source.path().join("render.sh"), "#!/bin/sh\necho hi\n").expect("write");
    std::fs::set_permissions(source.path().join("render.sh"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::write(source.path().join("notes.md"), "left out\n").expect("write");
    let options = PushOptions {
        tags: vec!["latest".into()],
        source: Some("https://github.com/org/fleet".into()),
        revision: Some("main@sha1:0123abcd".into()),
        annotations: BTreeMap::from([("team".to_string(), "web".to_string())]),
        ..PushOptions::default()
    };
    let reference = registry.reference("fleet/apps:v1");
    let filter = Arc::new(|path: &str, _: bool| !path.ends_with(".md"));
    let pushed = client.push_artifact(&reference, source.path(), filter, &options).await.expect("push");
    assert_eq!(pushed.revision, format!("v1@{}", pushed.digest));

    let (manifest, digest) = client.manifest(&registry.reference("fleet/apps:latest")).await.expect("manifest");
    assert_eq!(digest, pushed.digest, "both tags name one manifest");
    assert_eq!(manifest.media_type.as_deref(), Some(OCI_MANIFEST));
    assert_eq!((manifest.config.media_type.as_str(), manifest.config.size), (FLUX_CONFIG, 2));
    assert_eq!(manifest.layers.len(), 1);
    assert_eq!(manifest.layers[0].media_type, FLUX_CONTENT);
    assert_eq!(manifest.annotations["org.opencontainers.image.source"], "https://github.com/org/fleet");
    assert_eq!(manifest.annotations["org.opencontainers.image.revision"], "main@sha1:0123abcd");
    assert_eq!(manifest.annotations["team"], "web");
    let created = &manifest.annotations["org.opencontainers.image.created"];
    assert!(created.parse::<jiff::Timestamp>().is_ok(), "RFC 3339: {created}");

    let later = manifests_dir("2.0");
    let v2 = client
        .push_artifact(&registry.reference("fleet/apps:v2"), later.path(), keep_all(), &PushOptions::default())
        .await
        .expect("push v2");
    let uploads_before = registry.requests().iter().filter(|r| r.method == "POST" || r.method == "PATCH").count();
    let tagged = client.tag(&registry.reference("fleet/apps:v1"), &["stable".into()]).await.expect("tag");
    assert_eq!(tagged, pushed.digest);
    let uploads_after = registry.requests().iter().filter(|r| r.method == "POST" || r.method == "PATCH").count();
    assert_eq!(uploads_before, uploads_after, "tagging uploads no blob");

    let listed = client.list(&registry.reference("fleet/apps")).await.expect("list");
    let tags: Vec<(&str, &str)> = listed.iter().map(|l| (l.tag.as_str(), l.digest.as_str())).collect();
    assert_eq!(tags[0], ("v2", v2.digest.as_str()), "newest first: {tags:?}");
    let mut rest = tags[1..].to_vec();
    rest.sort();
    let v1 = pushed.digest.as_str();
    assert_eq!(rest, [("latest", v1), ("stable", v1), ("v1", v1)]);
    let v1_listed = listed.iter().find(|l| l.tag == "v1").expect("v1");
    assert_eq!(v1_listed.revision.as_deref(), Some("main@sha1:0123abcd"));
    assert_eq!(v1_listed.source.as_deref(), Some("https://github.com/org/fleet"));

    let resolved = client.resolve(&registry.reference("fleet/apps:stable"), &Select::Reference).await.expect("resolve");
    assert_eq!(resolved.revision, format!("stable@{}", pushed.digest));
    let into = tempfile::tempdir().expect("tempdir");
    let pulled = client.pull(&resolved, &into.path().join("files"), &PullOptions::default()).await.expect("pull");
    assert_eq!(pulled.digest, pushed.digest);
    assert_eq!(pulled.annotations["team"], "web");
    let mut expected = files(source.path());
    expected.retain(|(path, _, _)| !path.ends_with(".md"));
    assert_eq!(files(&pulled.path), expected, "the same bytes and executable bits, without the filtered file");

    let error = client.pull(&resolved, &pulled.path, &PullOptions::default()).await.expect_err("not empty");
    assert!(error.to_string().contains("not empty"), "{error}");

    let copied = client
        .pull(
            &resolved,
            &into.path().join("copy"),
            &PullOptions {
                layer: LayerSelector { media_type: FLUX_CONTENT.into(), operation: LayerOperation::Copy },
                ..PullOptions::default()
            },
        )
        .await
        .expect("copy");
    let bytes = std::fs::read(&copied.path).expect("layer");
    assert_eq!(bosun_oci::manifest::Descriptor { size: bytes.len() as u64, ..pushed.layer.clone() }, pushed.layer);
    assert_eq!(format!("sha256:{}", hex::encode(sha2::Sha256::digest(&bytes))), pushed.layer.digest);

    let by_digest = client
        .resolve(&registry.reference("fleet/apps").with_digest(&pushed.digest), &semver("*"))
        .await
        .expect("digest");
    assert_eq!(by_digest.revision, pushed.digest, "a digest wins over a range, and is the revision alone");
}

use sha2::Digest as _;

#[tokio::test]
async fn the_same_directory_gives_the_same_digest() {
    let registry = Registry::start(false, None);
    let client = registry.client(RegistryCredentials::Anonymous);
    let dir = manifests_dir("1.0");
    let time = fixed_time("2025-01-02T03:04:05Z");
    let first = client.push_artifact(&registry.reference("app:a"), dir.path(), keep_all(), &time).await.expect("a");
    // Rewritten files: new mtimes, same content.
    let again = manifests_dir("1.0");
    let second = client.push_artifact(&registry.reference("app:b"), again.path(), keep_all(), &time).await.expect("b");
    assert_eq!((&first.digest, &first.layer), (&second.digest, &second.layer));
    let other_time = fixed_time("2025-01-02T03:04:06Z");
    let third =
        client.push_artifact(&registry.reference("app:c"), dir.path(), keep_all(), &other_time).await.expect("c");
    assert_eq!(third.layer, first.layer, "the layer depends on the files only");
    assert_ne!(third.digest, first.digest, "the manifest carries the created time");
    let changed = manifests_dir("1.1");
    let fourth =
        client.push_artifact(&registry.reference("app:d"), changed.path(), keep_all(), &time).await.expect("d");
    assert_ne!(fourth.layer.digest, first.layer.digest);
}

#[tokio::test]
async fn a_semver_range_picks_the_highest_matching_tag() {
    let registry = Registry::start(false, None);
    let client = registry.client(RegistryCredentials::Anonymous);
    let mut digests = BTreeMap::new();
    for version in ["1.0.0", "1.2.0", "2.0.0", "latest"] {
        let dir = manifests_dir(version);
        let pushed = client
            .push_artifact(
                &registry.reference(&format!("app:{version}")),
                dir.path(),
                keep_all(),
                &PushOptions::default(),
            )
            .await
            .expect("push");
        digests.insert(version, pushed.digest);
    }
    let repository = registry.reference("app");
    for (range, tag) in [(">=1.0.0, <2.0.0", "1.2.0"), ("^1.0", "1.2.0"), (">=1.0.0", "2.0.0"), ("~1.0", "1.0.0")] {
        let resolved = client.resolve(&repository, &semver(range)).await.expect(range);
        assert_eq!(resolved.revision, format!("{tag}@{}", digests[tag]), "{range}");
    }
    let filtered = Select::Semver {
        range: Arc::new(bosun_semver::Constraints::parse(">=1.0.0").expect("range")),
        filter: Some(regex::Regex::new(r"^1\.").expect("regex")),
    };
    let resolved = client.resolve(&repository, &filtered).await.expect("filtered");
    assert_eq!(resolved.reference.tag.as_deref(), Some("1.2.0"));
    let error = client.resolve(&repository, &semver("^3")).await.expect_err("none");
    assert!(matches!(error, Error::NoMatchingTag { tags: 4, .. }), "{error}");
    assert!(error.to_string().contains("^3") && error.to_string().contains(&repository.repository_url()), "{error}");
}

#[tokio::test]
async fn an_unchanged_artifact_costs_one_head_and_downloads_nothing() {
    let registry = Registry::start(true, Some((USER, PASSWORD)));
    let client = registry.client(basic());
    let dir = manifests_dir("1.0");
    let reference = registry.reference("app:prod");
    client.push_artifact(&reference, dir.path(), keep_all(), &PushOptions::default()).await.expect("push");
    // A controller: resolve, compare with what it has, pull only when changed.
    let into = tempfile::tempdir().expect("tempdir");
    let mut last: Option<String> = None;
    let mut pulls = 0;
    let mut reconcile = async |round: usize| {
        let resolved = client.resolve(&reference, &Select::Reference).await.expect("resolve");
        if last.as_deref() != Some(resolved.digest.as_str()) {
            client.pull(&resolved, &into.path().join(round.to_string()), &PullOptions::default()).await.expect("pull");
            last = Some(resolved.digest);
            pulls += 1;
        }
    };
    reconcile(0).await;
    let before = registry.requests().len();
    reconcile(1).await;
    reconcile(2).await;
    assert_eq!(pulls, 1);
    let after: Vec<_> = registry.requests().split_off(before);
    assert!(!after.is_empty(), "the resolutions reached the registry");
    for request in &after {
        assert!(
            request.method == "HEAD" && request.path.contains("/manifests/prod"),
            "only HEADs of the manifest when unchanged: {after:?}"
        );
    }
    assert_eq!(after.iter().filter(|r| r.status == 200).count(), 2, "{after:?}");
    assert!(!after.iter().any(|r| r.path.contains("/blobs/")), "no blob request: {after:?}");
}

#[tokio::test]
async fn credentials_are_checked_and_a_refusal_names_registry_and_user() {
    let registry = Registry::start(true, Some((USER, PASSWORD)));
    let dir = manifests_dir("1.0");
    let reference = registry.reference("app:v1");
    let wrong =
        registry.client(RegistryCredentials::Basic { username: USER.into(), password: "wrong-password".into() });
    let error =
        wrong.push_artifact(&reference, dir.path(), keep_all(), &PushOptions::default()).await.expect_err("401");
    let text = error.to_string();
    assert!(matches!(error, Error::Registry(RegistryError::Unauthorized { .. })), "{text}");
    assert!(text.contains(&registry.host) && text.contains(USER) && text.contains("401"), "{text}");
    assert!(!text.contains("wrong-password"), "{text}");

    let anonymous = registry.client(RegistryCredentials::Anonymous);
    let error = anonymous.resolve(&reference, &Select::Reference).await.expect_err("anonymous");
    assert!(error.to_string().contains("anonymous") && error.to_string().contains(&registry.host), "{error}");

    // The same credentials from a dockerconfigjson Secret's bytes.
    let auth = base64_encode(&format!("{USER}:{PASSWORD}"));
    let json = format!(r#"{{"auths": {{"https://{}": {{"auth": "{auth}"}}}}}}"#, registry.host);
    let config = DockerConfig::from_json(json.as_bytes(), "Secret flux-system/regcred").expect("config");
    let client = Client::new(ClientOptions {
        credentials: CredentialSource::Docker(config),
        ..registry.options(RegistryCredentials::Anonymous)
    })
    .expect("client");
    let pushed = client.push_artifact(&reference, dir.path(), keep_all(), &PushOptions::default()).await.expect("push");
    let resolved = client.resolve(&reference, &Select::Reference).await.expect("resolve");
    assert_eq!(resolved.digest, pushed.digest);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bearer_tokens_come_from_the_registrys_token_service_and_are_reused() {
    use std::sync::atomic::Ordering::SeqCst;
    let tokens = TokenService::start(USER, PASSWORD, "refresh-me").await;
    let registry = Registry::start_with(
        true,
        Some(Auth::Token { realm: tokens.realm.clone(), signer_pem: tokens.signer_pem.clone() }),
    );
    let client = registry.client(basic());
    let dir = manifests_dir("1.0");
    let reference = registry.reference("team/app:v1");
    let pushed = client.push_artifact(&reference, dir.path(), keep_all(), &PushOptions::default()).await.expect("push");
    let resolved = client.resolve(&reference, &Select::Reference).await.expect("resolve");
    assert_eq!(resolved.digest, pushed.digest);
    let issued = tokens.issued.load(SeqCst);
    assert!((1..=2).contains(&issued), "one token per scope (push, then pull): {issued}");
    for _ in 0..3 {
        client.resolve(&reference, &Select::Reference).await.expect("resolve");
    }
    let into = tempfile::tempdir().expect("tempdir");
    client.pull(&resolved, &into.path().join("f"), &PullOptions::default()).await.expect("pull");
    assert_eq!(tokens.issued.load(SeqCst), issued, "tokens are reused");

    // A Docker config's identitytoken is exchanged as an OAuth2 refresh token.
    let json = format!(r#"{{"auths": {{"{}": {{"identitytoken": "refresh-me"}}}}}}"#, registry.host);
    let config = DockerConfig::from_json(json.as_bytes(), "config.json").expect("config");
    let options = ClientOptions {
        credentials: CredentialSource::Docker(config),
        ..registry.options(RegistryCredentials::Anonymous)
    };
    let by_refresh = Client::new(options).expect("client");
    assert_eq!(by_refresh.resolve(&reference, &Select::Reference).await.expect("resolve").digest, pushed.digest);

    for (credentials, user) in [
        (RegistryCredentials::Basic { username: USER.into(), password: "wrong-password".into() }, USER),
        (RegistryCredentials::IdentityToken("stale".into()), "<identity token>"),
        (RegistryCredentials::Anonymous, "anonymous"),
    ] {
        let error = registry.client(credentials).resolve(&reference, &Select::Reference).await.expect_err(user);
        let text = error.to_string();
        assert!(matches!(error, Error::Registry(RegistryError::Unauthorized { .. })), "{text}");
        assert!(text.contains(&registry.host) && text.contains(user) && !text.contains("wrong-password"), "{text}");
    }
}

fn base64_encode(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}

#[tokio::test]
async fn a_missing_tag_is_named() {
    let registry = Registry::start(false, None);
    let client = registry.client(RegistryCredentials::Anonymous);
    let dir = manifests_dir("1.0");
    client
        .push_artifact(&registry.reference("app:v1"), dir.path(), keep_all(), &PushOptions::default())
        .await
        .expect("push");
    let error = client.resolve(&registry.reference("app:nope"), &Select::Reference).await.expect_err("missing");
    assert!(matches!(error, Error::Registry(RegistryError::NotFound { .. })), "{error}");
    assert!(error.to_string().contains("tag nope") && error.to_string().contains(&registry.host), "{error}");
}

#[tokio::test]
async fn a_tampered_blob_is_refused_and_nothing_is_extracted() {
    let registry = Registry::start(false, None);
    let client = registry.client(RegistryCredentials::Anonymous);
    let dir = manifests_dir("1.0");
    let reference = registry.reference("app:v1");
    let pushed = client.push_artifact(&reference, dir.path(), keep_all(), &PushOptions::default()).await.expect("push");
    let stored = registry.blob_file(&pushed.layer.digest);
    let size = std::fs::metadata(&stored).expect("stored blob").len();
    std::fs::write(&stored, vec![b'x'; size as usize]).expect("tamper");
    let resolved = client.resolve(&reference, &Select::Reference).await.expect("resolve");
    let into = tempfile::tempdir().expect("tempdir");
    let files_dir = into.path().join("files");
    let error = client.pull(&resolved, &files_dir, &PullOptions::default()).await.expect_err("tampered");
    assert!(matches!(error, Error::Registry(RegistryError::DigestMismatch { .. })), "{error}");
    assert!(error.to_string().contains(&pushed.layer.digest), "{error}");
    assert!(!files_dir.exists(), "nothing extracted");

    let small = Client::new(ClientOptions { max_blob_size: 16, ..registry.options(RegistryCredentials::Anonymous) })
        .expect("client");
    let error = small.pull(&resolved, &files_dir, &PullOptions::default()).await.expect_err("too large");
    let text = error.to_string();
    assert!(text.contains(&size.to_string()) && text.contains("limit of 16 bytes"), "names both sizes: {text}");
}

#[tokio::test]
async fn large_layers_upload_in_chunks() {
    let registry = Registry::start(false, None);
    let client = registry.client(RegistryCredentials::Anonymous);
    let dir = tempfile::tempdir().expect("tempdir");
    // 9 MiB that gzip cannot shrink: a SHA-256 chain.
    let mut block = sha2::Sha256::digest(b"seed").to_vec();
    let mut content = Vec::with_capacity(9 << 20);
    while content.len() < 9 << 20 {
        block = sha2::Sha256::digest(&block).to_vec();
        content.extend_from_slice(&block);
    }
    std::fs::write(dir.path().join("big.bin"), &content).expect("write");
    let reference = registry.reference("big:v1");
    let pushed = client.push_artifact(&reference, dir.path(), keep_all(), &PushOptions::default()).await.expect("push");
    assert!(pushed.layer.size > 8 << 20, "{}", pushed.layer.size);
    assert!(registry.requests().iter().any(|r| r.method == "PATCH" && r.status == 202), "chunked");
    let resolved = client.resolve(&reference, &Select::Reference).await.expect("resolve");
    let into = tempfile::tempdir().expect("tempdir");
    let pulled = client.pull(&resolved, &into.path().join("f"), &PullOptions::default()).await.expect("pull");
    assert_eq!(std::fs::read(pulled.path.join("big.bin")).expect("read"), content);
}

#[tokio::test]
async fn signatures_are_checked_before_anything_is_downloaded() {
    let registry = Registry::start(true, Some((USER, PASSWORD)));
    let client = registry.client(basic());
    let key = |()| {
        let generated = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("key");
        SigningKey::from_pkcs8_pem(generated.serialize_pem().as_bytes()).expect("pkcs8")
    };
    let (signer, stranger) = (key(()), key(()));
    let (one, two) = (manifests_dir("1"), manifests_dir("2"));
    let signed = client
        .push_artifact(&registry.reference("app:signed"), one.path(), keep_all(), &PushOptions::default())
        .await
        .expect("push");
    let unsigned = client
        .push_artifact(&registry.reference("app:unsigned"), two.path(), keep_all(), &PushOptions::default())
        .await
        .expect("push");
    client.sign(&registry.reference("app"), &signed.digest, &signer).await.expect("sign");

    let verify =
        |key: &SigningKey| PullOptions { verify: Some(Verify::Key(key.public_key())), ..PullOptions::default() };
    let into = tempfile::tempdir().expect("tempdir");
    let resolved = client.resolve(&registry.reference("app:signed"), &Select::Reference).await.expect("resolve");
    let pulled = client.pull(&resolved, &into.path().join("ok"), &verify(&signer)).await.expect("signed by the key");
    assert_eq!(files(&pulled.path), files(one.path()));

    let fail = async |tag: &str, key: &SigningKey, at: &str| {
        let resolved =
            client.resolve(&registry.reference(&format!("app:{tag}")), &Select::Reference).await.expect("resolve");
        let before = registry.requests().len();
        let error = client.pull(&resolved, &into.path().join(at), &verify(key)).await.expect_err(at);
        let layer_gets =
            registry.requests().split_off(before).into_iter().filter(|r| r.path.contains("/blobs/")).count();
        assert!(!into.path().join(at).exists(), "nothing extracted for {at}");
        (error, layer_gets)
    };
    let (error, _) = fail("signed", &stranger, "stranger").await;
    assert!(matches!(error, Error::Signature(SignatureError::BadSignature { .. })), "{error}");
    assert!(error.to_string().contains(&signed.digest), "{error}");

    let (error, blob_requests) = fail("unsigned", &signer, "unsigned").await;
    assert!(matches!(error, Error::Signature(SignatureError::Unsigned { .. })), "{error}");
    assert!(error.to_string().contains(&format!("sha256-{}.sig", &unsigned.digest[7..])), "{error}");
    assert_eq!(blob_requests, 0, "an unsigned artifact's layer is not downloaded");

    // A valid signature of another manifest, put where the unsigned one's would be.
    let sig_of_signed = registry.reference(&format!("app:sha256-{}.sig", &signed.digest[7..]));
    client.tag(&sig_of_signed, &[format!("sha256-{}.sig", &unsigned.digest[7..])]).await.expect("copy signature");
    let (error, _) = fail("unsigned", &signer, "moved").await;
    assert!(matches!(error, Error::Signature(SignatureError::WrongDigest { .. })), "{error}");
    assert!(error.to_string().contains(&signed.digest) && error.to_string().contains(&unsigned.digest), "{error}");

    let keyless = PullOptions {
        verify: Some(Verify::Keyless {
            issuer: "https://token.actions.githubusercontent.com".into(),
            subject: "x".into(),
        }),
        ..PullOptions::default()
    };
    let error = client.pull(&resolved, &into.path().join("keyless"), &keyless).await.expect_err("keyless");
    assert!(error.to_string().contains("keyless") && error.to_string().contains("not supported"), "{error}");
    let listed = client.list(&registry.reference("app")).await.expect("list");
    assert!(listed.iter().all(|l| !l.tag.ends_with(".sig")), "signature tags are not listed: {listed:?}");
}

/// A chart archive as `helm package` lays it out: the chart's directory, tar+gzip.
fn chart(dir: &std::path::Path, version: &str) -> std::path::PathBuf {
    let source = tempfile::tempdir().expect("tempdir");
    let chart_yaml = format!("apiVersion: v2\nname: web\nversion: {version}\ndescription: A web app\n");
    write_files(
        source.path(),
        &[
            ("web/Chart.yaml", &chart_yaml),
            ("web/values.yaml", "replicas: 1\n"),
            ("web/templates/deployment.yaml", "kind: Deployment\n"),
        ],
    );
    let path = dir.join(format!("web-{version}.tgz"));
    bosun_oci::archive::pack(source.path(), &|_, _| true, &path).expect("package");
    path
}

#[tokio::test]
async fn helm_charts_are_pushed_and_pulled_with_helms_media_types() {
    let registry = Registry::start(true, Some((USER, PASSWORD)));
    let client = registry.client(basic());
    let dir = tempfile::tempdir().expect("tempdir");
    let charts = registry.reference("charts");
    let first = client.push_chart(&charts, &chart(dir.path(), "1.0.0")).await.expect("push 1.0.0");
    let second = client.push_chart(&charts, &chart(dir.path(), "1.1.0+build.7")).await.expect("push 1.1.0");
    assert_eq!(second.reference.repository, "charts/web");
    assert_eq!(second.reference.tag.as_deref(), Some("1.1.0_build.7"));

    let (manifest, digest) = client.manifest(&registry.reference("charts/web:1.0.0")).await.expect("manifest");
    assert_eq!(digest, first.digest);
    assert_eq!(manifest.config.media_type, HELM_CONFIG);
    assert_eq!(manifest.layers.iter().map(|l| l.media_type.as_str()).collect::<Vec<_>>(), [HELM_CHART_CONTENT]);
    assert_eq!(manifest.annotations["org.opencontainers.image.title"], "web");
    assert_eq!(manifest.annotations["org.opencontainers.image.version"], "1.0.0");
    // The config is Chart.yaml as JSON.
    let metadata = bosun_oci::read_chart(&dir.path().join("web-1.0.0.tgz")).expect("chart").metadata;
    let config = serde_json::to_vec(&metadata).expect("json");
    assert_eq!(manifest.config.digest, format!("sha256:{}", hex::encode(sha2::Sha256::digest(&config))));
    assert_eq!(metadata["description"], "A web app");

    let into = tempfile::tempdir().expect("tempdir");
    let chart_reference = registry.reference("charts/web");
    let exact = client
        .pull_chart(&chart_reference, &WantedChartVersion::Exact("1.0.0".into()), &into.path().join("exact"))
        .await
        .expect("exact");
    assert_eq!(exact.path, into.path().join("exact/web-1.0.0.tgz"));
    let range = WantedChartVersion::Range(Arc::new(bosun_semver::Constraints::parse(">=1.0.0").expect("range")));
    let newest = client.pull_chart(&chart_reference, &range, &into.path().join("range")).await.expect("range");
    assert_eq!(newest.path, into.path().join("range/web-1.1.0+build.7.tgz"));
    assert_eq!(newest.revision, format!("1.1.0_build.7@{}", second.digest));
    assert_eq!(
        std::fs::read(&newest.path).expect("read"),
        std::fs::read(dir.path().join("web-1.1.0+build.7.tgz")).expect("read")
    );
    let pulled_meta = bosun_oci::read_chart(&newest.path).expect("chart");
    assert_eq!(pulled_meta.version, "1.1.0+build.7");

    let flux = manifests_dir("1");
    client
        .push_artifact(&registry.reference("charts/notachart:1.0.0"), flux.path(), keep_all(), &PushOptions::default())
        .await
        .expect("push");
    let error = client
        .pull_chart(
            &registry.reference("charts/notachart"),
            &WantedChartVersion::Exact("1.0.0".into()),
            &into.path().join("no"),
        )
        .await
        .expect_err("not a chart");
    assert!(error.to_string().contains(HELM_CHART_CONTENT) && error.to_string().contains(FLUX_CONTENT), "{error}");
}

#[tokio::test]
async fn loopback_registries_work_over_plain_http_and_tls_needs_its_ca() {
    let plain = Registry::start(false, None);
    let client = Client::new(ClientOptions::default()).expect("client");
    let dir = manifests_dir("1.0");
    let reference = plain.reference("app:v1");
    client.push_artifact(&reference, dir.path(), keep_all(), &PushOptions::default()).await.expect("plain HTTP push");
    let resolved = client.resolve(&reference, &Select::Reference).await.expect("resolve");
    let into = tempfile::tempdir().expect("tempdir");
    let pulled = client.pull(&resolved, &into.path().join("f"), &PullOptions::default()).await.expect("pull");
    assert_eq!(files(&pulled.path), files(dir.path()));

    let tls = Registry::start(true, None);
    let reference = tls.reference("app:v1");
    let without_ca =
        Client::new(ClientOptions { ca_pem: None, ..tls.options(RegistryCredentials::Anonymous) }).expect("client");
    let error = without_ca.resolve(&reference, &Select::Reference).await.expect_err("unknown CA");
    assert!(matches!(error, Error::Registry(RegistryError::Connection { .. })), "{error}");
    assert!(error.to_string().contains(&tls.host), "{error}");
    let insecure =
        Client::new(ClientOptions { ca_pem: None, insecure: true, ..tls.options(RegistryCredentials::Anonymous) })
            .expect("client");
    insecure.push_artifact(&reference, dir.path(), keep_all(), &PushOptions::default()).await.expect("insecure push");
    let with_ca = tls.client(RegistryCredentials::Anonymous);
    with_ca.resolve(&reference, &Select::Reference).await.expect("with the CA");
    let error = Client::new(ClientOptions { ca_pem: Some(b"not pem".to_vec()), ..ClientOptions::default() })
        .expect_err("bad CA");
    assert!(error.to_string().contains("CA bundle"), "{error}");
}
