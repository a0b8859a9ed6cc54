//! `bosun push|pull|list|tag artifact` and `bosun push chart`: OCI artifacts (Flux's media
//! types) and Helm charts in container registries, through bosun-oci.

use std::{collections::BTreeMap, path::PathBuf, process::ExitCode};

use bosun_oci::{
    Client, ClientOptions, CredentialSource, DockerConfig, Protocol, PullOptions, PushOptions, Reference,
    RegistryCredentials, Select, archive,
};

use crate::stdout::outln;

/// How to reach the registry.
#[derive(Debug, clap::Args)]
pub struct RegistryFlags {
    /// The registry's user and password (or token); default: the Docker config's.
    ///
    /// Without it, credentials come from the Docker config as `docker login` writes it
    /// ($DOCKER_CONFIG/config.json, else ~/.docker/config.json), its credential helpers
    /// included; with neither, none are sent.
    #[arg(long, value_name = "USER:PASSWORD")]
    creds: Option<String>,
    /// Speak plain HTTP to the registry (a registry on the network without TLS).
    ///
    /// A registry on localhost or 127.0.0.0/8 is spoken to over plain HTTP without this, as
    /// Docker does.
    #[arg(long)]
    insecure: bool,
    /// CA certificates (PEM) to trust besides the system's; HTTPS even for a loopback registry.
    #[arg(long, value_name = "FILE")]
    ca_file: Option<PathBuf>,
}

impl RegistryFlags {
    /// A client as the flags say, or why not (bad input).
    fn client(&self) -> Result<Client, String> {
        let credentials = match &self.creds {
            Some(creds) => CredentialSource::Fixed(RegistryCredentials::from_creds(creds).map_err(|e| e.to_string())?),
            None => match DockerConfig::from_default_file().map_err(|e| e.to_string())? {
                Some(config) => CredentialSource::Docker(config),
                None => CredentialSource::Anonymous,
            },
        };
        let ca_pem = match &self.ca_file {
            Some(file) => Some(std::fs::read(file).map_err(|e| format!("--ca-file {}: {e}", file.display()))?),
            None => None,
        };
        let protocol = match (self.insecure, ca_pem.is_some()) {
            (true, _) => Protocol::Http,
            (false, true) => Protocol::Https,
            (false, false) => Protocol::Auto,
        };
        Client::new(ClientOptions { credentials, ca_pem, protocol, ..ClientOptions::default() })
            .map_err(|e| e.to_string())
    }
}

/// `bosun push artifact|chart`.
#[derive(Debug, clap::Subcommand)]
pub enum Push {
    /// Pack a directory as an OCI artifact (Flux's media types) and push it; prints the digest.
    #[command(after_help = PUSH_ARTIFACT_HELP)]
    Artifact(PushArtifact),
    /// Push a Helm chart archive (`helm package`'s .tgz) as Helm 3.8+ does; prints the digest.
    #[command(
        after_help = "The chart goes to REPOSITORY/<name>:<version> (a + in the version is written _).\n\nExample:\n  bosun push chart web-1.2.0.tgz oci://ghcr.io/org/charts   # → oci://ghcr.io/org/charts/web:1.2.0"
    )]
    Chart(PushChart),
}

const PUSH_ARTIFACT_HELP: &str = "The files are those a Package source would take: Flux's default exclusions (.git/, images,\narchives, CI files) and .sourceignore files apply, and --ignore-paths adds patterns. The same\nfiles give the same layer digest. The manifest carries org.opencontainers.image.source,\n.revision and .created annotations.\n\nExamples:\n  bosun push artifact oci://ghcr.io/org/fleet:v1.2.0 ./deploy --tag latest \\\n    --source \"$(git config --get remote.origin.url)\" --revision \"main@sha1:$(git rev-parse HEAD)\"\n  DIGEST=$(bosun push artifact oci://localhost:5000/fleet:dev --path ./deploy)";

/// Arguments of `bosun push artifact`.
#[derive(Debug, clap::Args)]
pub struct PushArtifact {
    /// Where to: oci://HOST[:PORT]/REPOSITORY:TAG (no tag: latest).
    #[arg(value_name = "REFERENCE")]
    reference: Reference,
    /// The directory to pack.
    #[arg(value_name = "DIR", required_unless_present = "path")]
    dir: Option<PathBuf>,
    /// The directory to pack (as Flux's --path).
    #[arg(long, value_name = "DIR", conflicts_with = "dir")]
    path: Option<PathBuf>,
    /// Another tag for the same manifest (repeatable).
    #[arg(long = "tag", value_name = "TAG")]
    tags: Vec<String>,
    /// A manifest annotation KEY=VALUE (repeatable).
    #[arg(long = "annotation", value_name = "KEY=VALUE", value_parser = annotation)]
    annotations: Vec<(String, String)>,
    /// Where the files come from (org.opencontainers.image.source), e.g. the Git URL.
    #[arg(long, value_name = "URL")]
    source: Option<String>,
    /// Which revision of the source (org.opencontainers.image.revision), e.g. main@sha1:<commit>.
    #[arg(long, value_name = "REVISION")]
    revision: Option<String>,
    /// More files to leave out, in .gitignore syntax, comma-separated.
    #[arg(long, value_name = "PATTERNS", value_delimiter = ',')]
    ignore_paths: Vec<String>,
    #[command(flatten)]
    registry: RegistryFlags,
}

fn annotation(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_string(), value.to_string())),
        _ => Err(format!("{text:?} is not KEY=VALUE")),
    }
}

/// Arguments of `bosun push chart`.
#[derive(Debug, clap::Args)]
pub struct PushChart {
    /// The chart archive, as `helm package` writes it.
    #[arg(value_name = "CHART.tgz")]
    chart: PathBuf,
    /// The repository the chart goes under: oci://HOST[:PORT]/PATH.
    #[arg(value_name = "REPOSITORY")]
    repository: Reference,
    #[command(flatten)]
    registry: RegistryFlags,
}

/// `bosun pull artifact`.
#[derive(Debug, clap::Subcommand)]
pub enum Pull {
    /// Download an OCI artifact and extract its files into a directory; prints the revision.
    #[command(
        after_help = "The layer's digest is checked and its size bounded; entries leaving the directory are refused.\n\nExample:\n  bosun pull artifact oci://ghcr.io/org/fleet:v1.2.0 -o ./fleet"
    )]
    Artifact(PullArtifact),
}

/// Arguments of `bosun pull artifact`.
#[derive(Debug, clap::Args)]
pub struct PullArtifact {
    /// oci://HOST[:PORT]/REPOSITORY:TAG or …@sha256:DIGEST (no tag: latest).
    #[arg(value_name = "REFERENCE")]
    reference: Reference,
    /// The directory to extract into (created; must be empty).
    #[arg(short, long, value_name = "DIR")]
    output: PathBuf,
    #[command(flatten)]
    registry: RegistryFlags,
}

/// `bosun list artifacts`.
#[derive(Debug, clap::Subcommand)]
pub enum List {
    /// List a repository's tags, newest first, with their digests and revision annotations.
    #[command(after_help = "Example:\n  bosun list artifacts oci://ghcr.io/org/fleet")]
    Artifacts(ListArtifacts),
}

/// Arguments of `bosun list artifacts`.
#[derive(Debug, clap::Args)]
pub struct ListArtifacts {
    /// The repository: oci://HOST[:PORT]/REPOSITORY.
    #[arg(value_name = "REPOSITORY")]
    repository: Reference,
    #[command(flatten)]
    registry: RegistryFlags,
}

/// `bosun tag artifact`.
#[derive(Debug, clap::Subcommand)]
pub enum Tag {
    /// Give an artifact more tags (no blob is uploaded again); prints its digest.
    #[command(after_help = "Example:\n  bosun tag artifact oci://ghcr.io/org/fleet:v1.2.0 --tag production")]
    Artifact(TagArtifact),
}

/// Arguments of `bosun tag artifact`.
#[derive(Debug, clap::Args)]
pub struct TagArtifact {
    /// The artifact: oci://HOST[:PORT]/REPOSITORY:TAG or …@sha256:DIGEST.
    #[arg(value_name = "REFERENCE")]
    reference: Reference,
    /// The new tag (repeatable).
    #[arg(long = "tag", value_name = "TAG", required = true)]
    tags: Vec<String>,
    #[command(flatten)]
    registry: RegistryFlags,
}

/// Runs `bosun push …`.
pub async fn push(what: Push) -> ExitCode {
    match what {
        Push::Artifact(args) => push_artifact(args).await,
        Push::Chart(args) => {
            let client = match args.registry.client() {
                Ok(client) => client,
                Err(message) => return crate::bad_input(message),
            };
            match client.push_chart(&args.repository, &args.chart).await {
                Ok(pushed) => {
                    eprintln!("pushed {}", pushed.reference);
                    outln!("{}", pushed.digest);
                    ExitCode::SUCCESS
                }
                Err(error) => crate::bad_input(error.to_string()),
            }
        }
    }
}

async fn push_artifact(args: PushArtifact) -> ExitCode {
    let dir = args.path.or(args.dir).unwrap_or_default();
    let client = match args.registry.client() {
        Ok(client) => client,
        Err(message) => return crate::bad_input(message),
    };
    let kept = match tempfile::tempdir() {
        Ok(kept) => kept,
        Err(error) => return crate::bad_input(format!("a scratch directory: {error}")),
    };
    let ignore = args.ignore_paths.join("\n");
    if let Err(error) = bosun::source::copy_source_files(&dir, Some(&ignore), kept.path()) {
        return crate::bad_input(error);
    }
    let options = PushOptions {
        tags: args.tags,
        source: args.source,
        revision: args.revision,
        created: None,
        annotations: args.annotations.into_iter().collect::<BTreeMap<_, _>>(),
    };
    match client.push_artifact(&args.reference, kept.path(), archive::keep_all(), &options).await {
        Ok(pushed) => {
            let mut tags = vec![pushed.reference.tag.clone().unwrap_or_default()];
            tags.extend(options.tags);
            eprintln!("pushed {} as {}", dir.display(), tags.join(", "));
            outln!("{}", pushed.digest);
            ExitCode::SUCCESS
        }
        Err(error) => crate::bad_input(error.to_string()),
    }
}

/// Runs `bosun pull artifact`.
pub async fn pull(Pull::Artifact(args): Pull) -> ExitCode {
    let client = match args.registry.client() {
        Ok(client) => client,
        Err(message) => return crate::bad_input(message),
    };
    let pulled = async {
        let resolved = client.resolve(&args.reference, &Select::Reference).await?;
        client.pull(&resolved, &args.output, &PullOptions::default()).await
    };
    match pulled.await {
        Ok(pulled) => {
            let said = |key: &str| pulled.annotations.get(key).map(String::as_str).unwrap_or("-").to_string();
            eprintln!(
                "pulled into {} (source {}, revision {})",
                pulled.path.display(),
                said(bosun_oci::manifest::ANNOTATION_SOURCE),
                said(bosun_oci::manifest::ANNOTATION_REVISION)
            );
            outln!("{}", pulled.revision);
            ExitCode::SUCCESS
        }
        Err(error) => crate::bad_input(error.to_string()),
    }
}

/// Runs `bosun list artifacts`.
pub async fn list(List::Artifacts(args): List) -> ExitCode {
    let client = match args.registry.client() {
        Ok(client) => client,
        Err(message) => return crate::bad_input(message),
    };
    match client.list(&args.repository).await {
        Ok(listed) => {
            let rows: Vec<[String; 4]> = listed
                .into_iter()
                .map(|l| {
                    let or_dash = |v: Option<String>| v.unwrap_or_else(|| "-".into());
                    [l.tag, l.digest, or_dash(l.revision), or_dash(l.created)]
                })
                .collect();
            print_table(["TAG", "DIGEST", "REVISION", "CREATED"], &rows);
            ExitCode::SUCCESS
        }
        Err(error) => crate::bad_input(error.to_string()),
    }
}

/// Columns padded to their widest cell, two spaces apart.
fn print_table<const N: usize>(header: [&str; N], rows: &[[String; N]]) {
    let mut widths = header.map(str::len);
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.len());
        }
    }
    let line = |cells: [&str; N]| {
        let padded: Vec<String> = cells.iter().zip(widths).map(|(cell, width)| format!("{cell:width$}")).collect();
        padded.join("  ").trim_end().to_string()
    };
    outln!("{}", line(header));
    for row in rows {
        outln!("{}", line(row.each_ref().map(String::as_str)));
    }
}

/// Runs `bosun tag artifact`.
pub async fn tag(Tag::Artifact(args): Tag) -> ExitCode {
    let client = match args.registry.client() {
        Ok(client) => client,
        Err(message) => return crate::bad_input(message),
    };
    match client.tag(&args.reference, &args.tags).await {
        Ok(digest) => {
            eprintln!("tagged {} as {}", args.reference, args.tags.join(", "));
            outln!("{digest}");
            ExitCode::SUCCESS
        }
        Err(error) => crate::bad_input(error.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotations_are_key_equals_value() {
        assert_eq!(annotation("team=web"), Ok(("team".into(), "web".into())));
        assert_eq!(annotation("a=b=c"), Ok(("a".into(), "b=c".into())));
        assert_eq!(annotation("k="), Ok(("k".into(), String::new())));
        assert!(annotation("novalue").is_err());
        assert!(annotation("=x").is_err());
    }
}
