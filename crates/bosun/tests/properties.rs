//! Property tests of what bosun parses from users' files and flags: YAML manifest streams,
//! JSONPath templates (observe's `-a`, health checks), SOPS-looking documents. Whatever the
//! input, a value or an error naming the origin — never a panic.
//!
//! `PROPTEST_CASES=100000 cargo test -p bosun --test properties` runs longer than CI.

use proptest::prelude::*;
use serde_json::Value;

/// Text shaped like YAML: indentation, keys, lists, anchors, tags, document markers, quotes.
fn yaml_like() -> impl Strategy<Value = String> {
    let token = prop::sample::select(vec![
        "---\n",
        "...\n",
        "a: ",
        "b:\n",
        "  ",
        "- ",
        "&x ",
        "*x ",
        "!!str ",
        "!tag ",
        "\"q\"",
        "'s'",
        "|\n",
        ">\n",
        "{",
        "}",
        "[",
        "]",
        ", ",
        "# c\n",
        "\n",
        "1",
        "true",
        "~",
        "<<: *x\n",
        "? ",
        ": ",
        "\t",
        "%YAML 1.2\n",
        "kind: ConfigMap\n",
        "apiVersion: v1\n",
        "metadata:\n  name: n\n",
    ]);
    prop::collection::vec(token, 0..40).prop_map(|tokens| tokens.concat())
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "[ -~]{0,8}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map("[a-z]{1,3}", inner, 0..4).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn manifest_streams_parse_or_refuse_naming_the_file(text in prop_oneof![yaml_like(), "[ -~\n\t]{0,80}"]) {
        if let Err(error) = bosun_core::yaml::parse_stream(&text, "deploy/app.yaml") {
            prop_assert!(error.to_string().contains("deploy/app.yaml"), "{}", error);
        }
    }

    #[test]
    fn jsonpath_templates_parse_or_refuse_and_then_render(
        template in prop_oneof![
            "[ -~]{0,24}",
            prop::collection::vec(prop::sample::select(vec!["{", "}", ".", "..", "[", "]", "*", "?(@.", "==", "'x'", ")", "a", "b", "0", ":", ",", "$", "range", "end", "\\"]), 0..16).prop_map(|t| t.concat()),
        ],
        object in json_value(),
    ) {
        if let Ok(parsed) = bosun_core::jsonpath::JsonPathTemplate::parse(&template) {
            let _ = parsed.render(&object, false);
            let _ = parsed.render(&object, true);
            let _ = parsed.values(&object);
        }
    }
}

/// "Billion laughs": nine levels of nine aliases would expand to 9⁹ strings; refused, not
/// expanded.
#[test]
fn alias_bombs_are_refused_not_expanded() {
    let mut text = String::from("a0: &a0 [\"lol\"]\n");
    for level in 1..10 {
        let previous = format!("*a{}", level - 1);
        let list = [previous.as_str(); 9].join(", ");
        text.push_str(&format!("a{level}: &a{level} [{list}]\n"));
    }
    let started = std::time::Instant::now();
    let result = bosun_core::yaml::parse_stream(&text, "bomb.yaml");
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "took {:?}", started.elapsed());
    let error = result.expect_err("an alias bomb must be refused");
    assert!(error.to_string().contains("bomb.yaml"), "{error}");
}
