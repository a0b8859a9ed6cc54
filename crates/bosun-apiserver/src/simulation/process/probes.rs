//! A local container's startup and readiness probes under `--run-pods`: read from its spec
//! as the kubelet reads them (defaults included), and the readiness they add up to. A
//! container with probes is ready once its startup probe has passed and while its readiness
//! probe passes; one without is ready when it runs. `tcpSocket`, `httpGet` and `exec` are
//! checked for real against the process (its ports are on this host's loopback); liveness
//! probes are not run.

use std::time::Duration;

use serde_json::Value;

/// A container's probes.
#[derive(Debug, Clone, Default)]
pub struct Probes {
    /// Its startup probe.
    pub startup: Option<Probe>,
    /// Its readiness probe.
    pub readiness: Option<Probe>,
}

impl Probes {
    /// Whether there is any probe to run.
    pub fn any(&self) -> bool {
        self.startup.is_some() || self.readiness.is_some()
    }
}

/// What a probe checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// A TCP connection to the port is accepted.
    Tcp(u16),
    /// A GET of the path answers 200–399 (HTTPS: the port accepts connections).
    Http {
        /// The port.
        port: u16,
        /// The path, with its query.
        path: String,
        /// Whether the scheme is HTTPS (not spoken here: only the connection is checked).
        https: bool,
    },
    /// The command exits 0.
    Exec(Vec<String>),
    /// A check that cannot be made here, and why (the probe then always passes).
    Unsupported(String),
}

/// One probe of a container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// What it checks.
    pub check: Check,
    /// Before the first check.
    pub initial_delay: Duration,
    /// Between checks.
    pub period: Duration,
    /// How long a check may take.
    pub timeout: Duration,
    /// Passes in a row that make it pass.
    pub success_threshold: u32,
    /// Failures in a row that make it fail.
    pub failure_threshold: u32,
}

fn seconds(probe: &Value, field: &str, default: u64) -> Duration {
    Duration::from_secs(probe.get(field).and_then(Value::as_u64).unwrap_or(default))
}

fn count(probe: &Value, field: &str, default: u32) -> u32 {
    probe.get(field).and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok()).filter(|n| *n > 0).unwrap_or(default)
}

/// A port given as a number or as the name of one of the container's ports.
fn port_of(value: Option<&Value>, spec: &Value) -> Result<u16, String> {
    match value {
        Some(Value::Number(number)) => {
            number.as_u64().and_then(|n| u16::try_from(n).ok()).ok_or_else(|| format!("port {number} is out of range"))
        }
        Some(Value::String(name)) => {
            let ports = spec.get("ports").and_then(Value::as_array).into_iter().flatten();
            ports
                .filter(|port| port.get("name").and_then(Value::as_str) == Some(name.as_str()))
                .find_map(|port| port.get("containerPort").and_then(Value::as_u64).and_then(|n| u16::try_from(n).ok()))
                .or_else(|| name.parse().ok())
                .ok_or_else(|| format!("the container has no port named {name:?}"))
        }
        _ => Err("the probe names no port".to_string()),
    }
}

fn check_of(probe: &Value, spec: &Value) -> Check {
    let checked = if let Some(tcp) = probe.get("tcpSocket") {
        port_of(tcp.get("port"), spec).map(Check::Tcp)
    } else if let Some(http) = probe.get("httpGet") {
        port_of(http.get("port"), spec).map(|port| Check::Http {
            port,
            path: http.get("path").and_then(Value::as_str).filter(|p| !p.is_empty()).unwrap_or("/").to_string(),
            https: http.get("scheme").and_then(Value::as_str).is_some_and(|s| s.eq_ignore_ascii_case("https")),
        })
    } else if let Some(command) = probe.pointer("/exec/command").and_then(Value::as_array) {
        Ok(Check::Exec(command.iter().filter_map(Value::as_str).map(str::to_string).collect()))
    } else {
        Err("only tcpSocket, httpGet and exec probes are run".to_string())
    };
    checked.unwrap_or_else(Check::Unsupported)
}

/// A container's probe `field` (`startupProbe`, `readinessProbe`), with the kubelet's
/// defaults: 10 s apart, 1 s to answer, one pass, three failures.
pub fn probe(spec: &Value, field: &str) -> Option<Probe> {
    let probe = spec.get(field).filter(|p| p.is_object())?;
    Some(Probe {
        check: check_of(probe, spec),
        initial_delay: seconds(probe, "initialDelaySeconds", 0),
        period: seconds(probe, "periodSeconds", 10).max(Duration::from_secs(1)),
        timeout: seconds(probe, "timeoutSeconds", 1).max(Duration::from_secs(1)),
        // A startup probe passes at its first success, as upstream requires.
        success_threshold: if field == "startupProbe" { 1 } else { count(probe, "successThreshold", 1) },
        failure_threshold: count(probe, "failureThreshold", 3),
    })
}

/// Where a probe stands after its checks so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Standing {
    /// Whether it passes now.
    pub passing: bool,
    passes: u32,
    failures: u32,
}

impl Standing {
    /// After one more check: it passes after `success_threshold` passes in a row and fails
    /// after `failure_threshold` failures in a row (a readiness probe starts failing).
    pub fn after(self, probe: &Probe, passed: bool) -> Standing {
        let (passes, failures) = if passed { (self.passes + 1, 0) } else { (0, self.failures + 1) };
        let passing = if passed {
            self.passing || passes >= probe.success_threshold
        } else {
            self.passing && failures < probe.failure_threshold
        };
        Standing { passing, passes, failures }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn probes_read_as_the_kubelet_reads_them() {
        let spec = json!({"ports": [{"name": "http", "containerPort": 8080}],
            "startupProbe": {"tcpSocket": {"port": 1235}, "periodSeconds": 1, "failureThreshold": 30},
            "readinessProbe": {"httpGet": {"port": "http", "path": "/healthz"}, "initialDelaySeconds": 2, "successThreshold": 2},
            "livenessProbe": {"exec": {"command": ["true"]}}});
        let startup = probe(&spec, "startupProbe").expect("startup");
        assert_eq!(startup.check, Check::Tcp(1235));
        assert_eq!(
            (startup.period, startup.timeout, startup.failure_threshold),
            (Duration::from_secs(1), Duration::from_secs(1), 30)
        );
        let readiness = probe(&spec, "readinessProbe").expect("readiness");
        assert_eq!(readiness.check, Check::Http { port: 8080, path: "/healthz".into(), https: false });
        assert_eq!(
            (readiness.initial_delay, readiness.period, readiness.success_threshold),
            (Duration::from_secs(2), Duration::from_secs(10), 2)
        );
        assert_eq!(probe(&spec, "livenessProbe").expect("liveness").check, Check::Exec(vec!["true".into()]));
        assert_eq!(probe(&json!({}), "readinessProbe"), None);
        for (given, expected) in [
            (
                json!({"tcpSocket": {"port": "metrics"}}),
                Check::Unsupported("the container has no port named \"metrics\"".into()),
            ),
            (
                json!({"grpc": {"port": 9000}}),
                Check::Unsupported("only tcpSocket, httpGet and exec probes are run".into()),
            ),
            (
                json!({"httpGet": {"port": 443, "scheme": "HTTPS"}}),
                Check::Http { port: 443, path: "/".into(), https: true },
            ),
        ] {
            assert_eq!(probe(&json!({"readinessProbe": given}), "readinessProbe").expect("probe").check, expected);
        }
    }

    #[test]
    fn thresholds_count_checks_in_a_row() {
        let probe = Probe {
            check: Check::Tcp(1),
            initial_delay: Duration::ZERO,
            period: Duration::from_secs(1),
            timeout: Duration::from_secs(1),
            success_threshold: 2,
            failure_threshold: 2,
        };
        // (checks, passing after each)
        let cases: [(&[bool], &[bool]); 3] = [
            (&[true, true], &[false, true]),
            (
                &[true, false, true, true, false, true, false, false],
                &[false, false, false, true, true, true, true, false],
            ),
            (&[false, false, false], &[false, false, false]),
        ];
        for (checks, expected) in cases {
            let mut standing = Standing::default();
            let seen: Vec<bool> = checks
                .iter()
                .map(|passed| {
                    standing = standing.after(&probe, *passed);
                    standing.passing
                })
                .collect();
            assert_eq!(seen, expected, "{checks:?}");
        }
    }
}
