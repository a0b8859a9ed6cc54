//! What a well-known image runs when a container gives no `command`, for `--run-pods`.
//!
//! Kubernetes runs the image's `ENTRYPOINT` with the container's `args` (else the image's
//! `CMD`). bosun never pulls images, so it cannot read them; this table holds what the images
//! people start with `kubectl run … -- ARGS` run, as host commands. Entrypoints that are
//! wrapper scripts (`docker-entrypoint.sh`, which end by running their arguments) are left out:
//! the arguments run directly. The table is documented in docs/apiserver.md.

/// How an image starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Image {
    /// The image's name without registry, `library/`, tag or digest.
    pub name: &'static str,
    /// The `ENTRYPOINT`, as a host command (empty: none, the arguments are the command).
    pub entrypoint: &'static [&'static str],
    /// The `CMD`: what runs without `args`.
    pub cmd: &'static [&'static str],
    /// The program the wrapper entrypoint puts before arguments that are options (`redis`:
    /// `-- --port 7000` runs `redis-server --port 7000`).
    pub before_options: Option<&'static str>,
}

const fn shell(name: &'static str, cmd: &'static [&'static str]) -> Image {
    Image { name, entrypoint: &[], cmd, before_options: None }
}

const fn server(name: &'static str, cmd: &'static [&'static str]) -> Image {
    Image { name, entrypoint: &[], cmd, before_options: Some(cmd[0]) }
}

/// The images bosun knows, by name.
pub const IMAGES: &[Image] = &[
    shell("busybox", &["sh"]),
    shell("alpine", &["/bin/sh"]),
    shell("debian", &["bash"]),
    shell("ubuntu", &["bash"]),
    shell("fedora", &["bash"]),
    shell("bash", &["bash"]),
    shell("python", &["python3"]),
    shell("node", &["node"]),
    shell("ruby", &["irb"]),
    shell("perl", &["perl", "-de0"]),
    shell("curlimages/curl", &["curl"]),
    Image { name: "nginx", entrypoint: &[], cmd: &["nginx", "-g", "daemon off;"], before_options: Some("nginx") },
    server("redis", &["redis-server"]),
    server("memcached", &["memcached"]),
    server("postgres", &["postgres"]),
    Image { name: "httpd", entrypoint: &[], cmd: &["httpd", "-DFOREGROUND"], before_options: Some("httpd") },
];

/// Programs an image has under a name the host gives another: the `python` image's
/// `python` is Python 3, which Debian and Ubuntu install as `python3` only.
const HOST_NAMES: &[(&str, &str, &str)] = &[("python", "python", "python3"), ("python", "pip", "pip3")];

/// The name this host likely gives a program `image` has, when it differs.
pub fn host_name(image: &str, program: &str) -> Option<&'static str> {
    let name = short_name(image);
    HOST_NAMES.iter().find(|(i, p, _)| *i == name && *p == program).map(|(_, _, host)| *host)
}

/// The image's name as the table knows it: `docker.io/library/nginx:1.25@sha256:…` → `nginx`,
/// `registry.k8s.io/busybox` → `busybox`, `curlimages/curl:8` → `curlimages/curl`; a mirror
/// of a known image under another account (`mirror.example/team/python`) → `python`.
pub fn short_name(image: &str) -> String {
    let without_digest = image.split('@').next().unwrap_or(image);
    // A tag is a `:` after the last `/` (a `:` before it is a registry's port).
    let last_slash = without_digest.rfind('/').map_or(0, |i| i + 1);
    let without_tag = match without_digest[last_slash..].find(':') {
        Some(colon) => &without_digest[..last_slash + colon],
        None => without_digest,
    };
    let mut parts: Vec<&str> = without_tag.split('/').collect();
    // A first part with a dot or a port, or `localhost`, is a registry.
    if parts.len() > 1 && (parts[0].contains('.') || parts[0].contains(':') || parts[0] == "localhost") {
        parts.remove(0);
    }
    if parts.len() > 1 && parts[0] == "library" {
        parts.remove(0);
    }
    let path = parts.join("/");
    let known = |name: &str| IMAGES.iter().any(|i| i.name == name);
    match parts.last() {
        Some(last) if !known(&path) && known(last) => (*last).to_string(),
        _ => path,
    }
}

/// The command line a container without `command` runs: its `args` after the image's
/// entrypoint, else the image's `CMD`; `None` when the image is not in the table.
pub fn command_line(image: &str, args: &[String]) -> Option<Vec<String>> {
    let name = short_name(image);
    let known = IMAGES.iter().find(|i| i.name == name)?;
    let owned = |list: &[&str]| list.iter().map(|s| (*s).to_string()).collect::<Vec<_>>();
    let mut line = owned(known.entrypoint);
    match args.first() {
        None => line.extend(owned(known.cmd)),
        Some(first) => {
            if first.starts_with('-')
                && let Some(program) = known.before_options
            {
                line.push(program.to_string());
            }
            line.extend(args.iter().cloned());
        }
    }
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_names_lose_registry_tag_and_digest() {
        for (image, expected) in [
            ("nginx", "nginx"),
            ("nginx:1.25", "nginx"),
            ("docker.io/library/nginx:1.25", "nginx"),
            ("library/busybox", "busybox"),
            ("registry.k8s.io/busybox:1.36@sha256:0123", "busybox"),
            ("localhost:5000/alpine:3", "alpine"),
            ("curlimages/curl:8.5.0", "curlimages/curl"),
            ("mirror.example/team/python:3.12", "python"),
            ("ghcr.io/acme/app:1", "acme/app"),
        ] {
            assert_eq!(short_name(image), expected, "{image}");
        }
    }

    #[test]
    fn some_programs_have_another_name_on_the_host() {
        assert_eq!(host_name("python:3.12", "python"), Some("python3"));
        assert_eq!(host_name("docker.io/library/python", "pip"), Some("pip3"));
        assert_eq!(host_name("python", "python3"), None);
        assert_eq!(host_name("busybox", "python"), None);
    }

    #[test]
    fn arguments_run_after_the_entrypoint_else_the_cmd_runs() {
        let args = |list: &[&str]| list.iter().map(|s| (*s).to_string()).collect::<Vec<_>>();
        for (image, given, expected) in [
            ("busybox", args(&["sh", "-c", "echo hi"]), Some(args(&["sh", "-c", "echo hi"]))),
            ("busybox:1.36", args(&[]), Some(args(&["sh"]))),
            ("python:3.12", args(&["python3", "-m", "http.server"]), Some(args(&["python3", "-m", "http.server"]))),
            ("nginx", args(&[]), Some(args(&["nginx", "-g", "daemon off;"]))),
            ("redis:7", args(&["--port", "7000"]), Some(args(&["redis-server", "--port", "7000"]))),
            ("redis:7", args(&["redis-cli", "ping"]), Some(args(&["redis-cli", "ping"]))),
            ("example.com/app:1", args(&["run"]), None),
        ] {
            assert_eq!(command_line(image, &given), expected, "{image} {given:?}");
        }
    }
}
