use super::*;
use serde_json::json;

fn find(name: &str) -> Option<PathBuf> {
    match name {
        "sh" => Some(PathBuf::from("/bin/sh")),
        "/usr/bin/python3" => Some(PathBuf::from("/usr/bin/python3")),
        _ => None,
    }
}

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn plans_follow_command_and_args() {
    let local = |program: &str, args: &[&str]| Plan::Local {
        program: PathBuf::from(program),
        args: args.iter().map(|a| a.to_string()).collect(),
        identity: None,
    };
    let cases = [
        (json!({"name": "c", "command": ["sh", "-c"], "args": ["exit 3"]}), local("/bin/sh", &["-c", "exit 3"])),
        (json!({"name": "c", "command": ["/usr/bin/python3"]}), local("/usr/bin/python3", &[])),
        (
            json!({"name": "c", "command": ["sh", "$(GREETING)", "$$(GREETING)", "$(NONE)"]}),
            local("/bin/sh", &["hi", "$(GREETING)", "$(NONE)"]),
        ),
    ];
    for (spec, expected) in cases {
        assert_eq!(plan(&spec, &env(&[("GREETING", "hi")]), find), expected, "{spec}");
    }
    let simulated = |spec: Value| match plan(&spec, &[], find) {
        Plan::Simulated(why) => why,
        other => panic!("{spec} runs: {other:?}"),
    };
    assert!(
        simulated(json!({"name": "web", "image": "example.com/web:1", "args": ["-v"]})).contains(
            "container web has no command and --run-pods does not know what image \"example.com/web:1\" runs"
        )
    );
    // `kubectl run x --image=busybox -- sh -c '…'`: the arguments are the command line.
    assert_eq!(
        plan(&json!({"name": "x", "image": "busybox", "args": ["sh", "-c", "exit 3"]}), &[], find),
        local("/bin/sh", &["-c", "exit 3"])
    );
    assert!(simulated(json!({"name": "web", "command": ["nginx"]})).contains("\"nginx\" is not found on this host"));
}

#[test]
fn expansion_is_the_kubelets() {
    let vars = env(&[("A", "1"), ("B", "two")]);
    for (text, expected) in
        [("$(A)-$(B)", "1-two"), ("$$(A)", "$(A)"), ("$(C)", "$(C)"), ("cost $5", "cost $5"), ("$(A", "$(A"), ("", "")]
    {
        assert_eq!(expand(text, &vars), expected, "{text}");
    }
}

struct Objects;

impl Sources for Objects {
    fn config_map(&self, name: &str) -> Option<BTreeMap<String, String>> {
        (name == "settings").then(|| config_map_data(&json!({"data": {"MODE": "fast", "LEVEL": "3"}})))
    }
    fn secret(&self, name: &str) -> Option<BTreeMap<String, String>> {
        (name == "creds").then(|| secret_data(&json!({"data": {"PASSWORD": "czNjcjN0"}})))
    }
}

#[test]
fn environment_comes_from_spec_config_maps_secrets_and_fields() {
    let pod = json!({"metadata": {"name": "web-1", "namespace": "shop", "labels": {"app": "web"}},
                     "spec": {"nodeName": "bosun-node-0"}, "status": {"podIP": "10.244.0.5"}});
    let spec = json!({"name": "web",
    "envFrom": [{"configMapRef": {"name": "settings"}, "prefix": "CFG_"}, {"secretRef": {"name": "absent", "optional": true}}],
    "env": [
        {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "MODE"}}},
        {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "PASSWORD"}}},
        {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
        {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "URL", "value": "http://$(IP):80/$(POD)"},
        {"name": "CFG_LEVEL", "value": "override"},
    ]});
    let got = environment(&pod, &spec, &Objects).expect("resolves");
    let expected = env(&[
        ("CFG_MODE", "fast"),
        ("MODE", "fast"),
        ("PASSWORD", "s3cr3t"),
        ("POD", "web-1"),
        ("APP", "web"),
        ("IP", "10.244.0.5"),
        ("URL", "http://10.244.0.5:80/web-1"),
        ("CFG_LEVEL", "override"),
    ]);
    assert_eq!(got, expected);
    let missing = [
        (json!({"envFrom": [{"configMapRef": {"name": "nope"}}]}), "configmap \"nope\" not found"),
        (
            json!({"env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "USER"}}}]}),
            "couldn't find key USER in secret \"creds\" (variable X)",
        ),
    ];
    for (spec, message) in missing {
        assert_eq!(environment(&pod, &spec, &Objects), Err(message.to_string()));
    }
}

#[test]
fn exit_codes_are_codes_or_signals() {
    for (code, signal, expected) in
        [(Some(0), None, 0), (Some(3), None, 3), (None, Some(15), 143), (None, Some(9), 137)]
    {
        assert_eq!(exit_code(code, signal), expected);
    }
}

#[test]
fn log_selection_by_tail_and_time() {
    let at = |second: i64| jiff::Timestamp::from_second(1_700_000_000 + second).expect("time");
    let lines: Vec<LogLine> = (0..5).map(|i| LogLine { at: at(i), text: format!("line {i}\n").into_bytes() }).collect();
    let text = |options: LogOptions| String::from_utf8(render(select(&lines, &options), false)).expect("utf-8");
    assert_eq!(text(LogOptions::default()), "line 0\nline 1\nline 2\nline 3\nline 4\n");
    assert_eq!(text(LogOptions { tail: Some(2), ..Default::default() }), "line 3\nline 4\n");
    assert_eq!(text(LogOptions { tail: Some(0), ..Default::default() }), "");
    assert_eq!(text(LogOptions { since: Some(at(3)), ..Default::default() }), "line 3\nline 4\n");
    assert_eq!(text(LogOptions { since: Some(at(1)), tail: Some(10), ..Default::default() }).lines().count(), 4);
    let stamped = String::from_utf8(render(&lines[..1], true)).expect("utf-8");
    assert_eq!(stamped, "2023-11-14T22:13:20Z line 0\n");
}
