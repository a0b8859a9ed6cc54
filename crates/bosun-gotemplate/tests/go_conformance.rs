//! Conformance with Go's `text/template`: the cases of Go's exec_test.go and parse_test.go
//! (derived from golang/go, BSD-3-Clause; see tests/go/README.md), run against this engine.
//!
//! Every case either passes or is listed in `KNOWN_FAILURES` with the reason; the test fails
//! when a case fails unlisted, and when a listed case passes (so the list, and CONFORMANCE.md
//! which repeats it, stay true).

mod go;

use std::collections::BTreeMap;

use bosun_gotemplate::{MissingKey, Template, Value};
use go::model;
use go::tables::{self, Data};

const ITERATORS: &str = "Go function iterators (iter.Seq, Go 1.23) have no counterpart in the value model";
const CAPACITY: &str =
    "slices have no capacity beyond their length in the value model, so slicing past len up to cap is out of range";

/// Cases that do not pass, by name, with the reason. CONFORMANCE.md lists the same.
const KNOWN_FAILURES: &[(&str, &str)] = &[
    ("exec/195 len(s) < indexes < cap(s)", CAPACITY),
    ("exec/196 len(s) < indexes < cap(s) (3-index)", CAPACITY),
    ("exec/257 range iter.Seq[int]", ITERATORS),
    ("exec/258 i = range iter.Seq[int]", ITERATORS),
    ("exec/259 range iter.Seq[int] over two var", ITERATORS),
    ("exec/260 i, c := range iter.Seq2[int,int]", ITERATORS),
    ("exec/261 i, c = range iter.Seq2[int,int]", ITERATORS),
    ("exec/262 i = range iter.Seq2[int,int]", ITERATORS),
    ("exec/263 i := range iter.Seq2[int,int]", ITERATORS),
    ("exec/264 i,c,x range iter.Seq2[int,int]", ITERATORS),
    ("exec/265 i,x range iter.Seq[int]", ITERATORS),
    ("exec/266 range iter.Seq[int] else", ITERATORS),
    ("exec/267 range iter.Seq2[int,int] else", ITERATORS),
    (
        "error message method call on nil interface",
        "a nil interface value carries no static interface type here: the message says `interface {}.Method0` where Go says `template.I.Method0`",
    ),
];

fn data_value(data: Data) -> Value {
    match data {
        Data::Nil | Data::Unrepresentable(_) => Value::Nil,
        Data::TVal => model::t_val(false),
        Data::TZero => model::t_val(true),
        Data::Int(i) => Value::int(i),
        Data::Uint(u) => Value::Uint(u, bosun_gotemplate::UintKind::Uint),
        Data::Float(f) => Value::Float(f),
        Data::Bool(b) => Value::Bool(b),
        Data::Complex(re, im) => Value::Complex(re, im),
        Data::Str(s) => Value::from(s),
        Data::Ints(items) => model::ints(items),
        Data::MapTwo22 => model::str_int_map(&[("two", 22)]),
        Data::Seven => model::seven(),
        Data::SliceOfNilT => model::slice_of_nil_t(),
        Data::PtrIVal => model::pointer_to_ival(),
        Data::MapCause => Value::typed_map(
            bosun_gotemplate::Type::String,
            BTreeMap::from([("cause".to_string(), Value::from("neglect"))]),
        ),
        Data::StringerMap => {
            Value::map(BTreeMap::from([("S".to_string(), model::stringer("*bytes.Buffer", "foozle"))]))
        }
        Data::CmpStruct => model::cmp_struct(),
        Data::InterfaceValues => model::interface_values(),
        Data::IntOf(kind, n) => model::int_kind(kind, n),
        Data::UintOf(kind, n) => Value::Uint(n, kind),
    }
}

fn with_test_funcs(name: &str) -> Template {
    let mut t = Template::new(name);
    t.add_funcs(model::test_funcs());
    t
}

/// Runs a template; returns its output and error text.
fn run(name: &str, input: &str, data: Data) -> (String, Option<String>) {
    let mut t = with_test_funcs(name);
    if let Err(e) = t.parse(name, input) {
        return (String::new(), Some(format!("parse: {e}")));
    }
    let mut out = String::new();
    let err = t.execute(name, &data_value(data), &mut out).err().map(|e| e.to_string());
    (out, err)
}

struct Outcome {
    name: String,
    failure: Option<String>,
}

fn check(name: String, failure: Option<String>) -> Outcome {
    Outcome { name, failure }
}

fn exec_outcomes() -> Vec<Outcome> {
    tables::exec_tests()
        .into_iter()
        .enumerate()
        .map(|(i, case)| {
            let name = format!("exec/{i:03} {}", case.name);
            if let Data::Unrepresentable(reason) = case.data {
                return check(name, Some(reason.to_string()));
            }
            let (out, err) = run(&case.name, &case.input, case.data);
            let failure = match (&err, case.ok) {
                (None, false) => Some(format!("expected an error, got output {out:?}")),
                (Some(e), true) => Some(format!("unexpected error: {e}")),
                _ if out != case.output => Some(format!("expected {:?}, got {out:?} (error {err:?})", case.output)),
                _ => None,
            };
            check(name, failure)
        })
        .collect()
}

fn cmp_outcomes() -> Vec<Outcome> {
    tables::cmp_tests()
        .into_iter()
        .map(|(expr, truth, ok)| {
            let (out, err) =
                run("empty", &format!("{{{{if {expr}}}}}true{{{{else}}}}false{{{{end}}}}"), Data::CmpStruct);
            let failure = match (&err, ok) {
                (None, false) => Some(format!("expected an error, got {out:?}")),
                (Some(e), true) => Some(format!("unexpected error: {e}")),
                _ if out != truth => Some(format!("expected {truth:?}, got {out:?}")),
                _ => None,
            };
            check(format!("cmp {expr}"), failure)
        })
        .collect()
}

fn interface_value_outcomes() -> Vec<Outcome> {
    tables::interface_value_tests()
        .into_iter()
        .map(|(text, want)| {
            let (out, err) = run("tmpl", text, Data::InterfaceValues);
            let failure = match (want.strip_prefix("ERROR: "), &err) {
                (Some(e), Some(got)) if got.contains(e) => None,
                (Some(e), _) => Some(format!("expected error containing {e:?}, got {err:?}")),
                (None, Some(got)) => Some(format!("unexpected error {got}")),
                (None, None) if out != want => Some(format!("expected {want:?}, got {out:?}")),
                (None, None) => None,
            };
            check(format!("interface values {text}"), failure)
        })
        .collect()
}

fn error_message_outcomes() -> Vec<Outcome> {
    tables::error_message_tests()
        .into_iter()
        .map(|(name, text, data, want)| {
            let template_name = if name == "TestExecError" { "top" } else { "t" };
            let (_, err) = run(template_name, text, data);
            let failure = match &err {
                Some(got) if got.contains(want) => None,
                _ => Some(format!("expected error containing {want:?}, got {err:?}")),
            };
            check(format!("error message {name}"), failure)
        })
        .collect()
}

fn parse_outcomes() -> Vec<Outcome> {
    tables::parse_tests()
        .into_iter()
        .map(|(name, input, ok, want)| {
            let template_name = if name == "TestUnterminatedStringError" { "X" } else { name };
            let mut t = Template::new(template_name);
            let result = t
                .parse(template_name, input)
                .map(|t| t.parse_tree(template_name).unwrap_or_default())
                .map_err(|e| e.to_string());
            let failure = match (&result, ok) {
                (Ok(tree), true) if tree != want => Some(format!("parse tree {tree:?}, Go's is {want:?}")),
                (Ok(_), true) => None,
                (Ok(_), false) => Some("expected a parse error".to_string()),
                (Err(e), true) => Some(format!("unexpected parse error: {e}")),
                (Err(e), false) if !e.contains(want) => Some(format!("error {e:?} does not contain {want:?}")),
                (Err(_), false) => None,
            };
            check(format!("parse {name}"), failure)
        })
        .collect()
}

/// The smaller tests of exec_test.go, each one case.
fn other_outcomes() -> Vec<Outcome> {
    let mut outcomes = Vec::new();
    let mut expect = |name: &str, got: Result<String, String>, want: &str| {
        let failure = match got {
            Ok(out) if out == want => None,
            Ok(out) => Some(format!("expected {want:?}, got {out:?}")),
            Err(e) => Some(format!("unexpected error {e}")),
        };
        outcomes.push(check(name.to_string(), failure));
    };

    // TestMissingMapKey.
    let data = Value::typed_map(bosun_gotemplate::Type::INT, BTreeMap::from([("x".to_string(), Value::int(99))]));
    let mut t = Template::new("t1");
    t.parse("t1", "{{.x}} {{.y}}").unwrap();
    expect("TestMissingMapKey default", t.render("t1", &data).map_err(|e| e.to_string()), "99 <no value>");
    t.option("missingkey=default").unwrap();
    expect("TestMissingMapKey explicit default", t.render("t1", &data).map_err(|e| e.to_string()), "99 <no value>");
    t.option("missingkey=zero").unwrap();
    expect("TestMissingMapKey zero", t.render("t1", &data).map_err(|e| e.to_string()), "99 0");
    t.set_missing_key(MissingKey::Error);
    let error = match (t.render("t1", &data), t.render("t1", &Value::Nil)) {
        (Err(_), Err(_)) => Ok("errors".to_string()),
        (a, b) => Ok(format!("{a:?} / {b:?}")),
    };
    expect("TestMissingMapKey error", error, "errors");

    // TestDelims.
    let value = Value::map(BTreeMap::from([("Str".to_string(), Value::from("Hello, world"))]));
    for (left, right) in [("", ""), ("{{", "}}"), ("<<", ">>"), ("|", "|"), ("(日)", "(本)")] {
        let (l, r) = (if left.is_empty() { "{{" } else { left }, if right.is_empty() { "}}" } else { right });
        let text = format!("{l}.Str{r}{l}/*comment*/{r}{l}\"{l}\"{r}");
        let mut t = Template::new("delims");
        t.delims(left, right);
        let got = t
            .parse("delims", &text)
            .map_err(|e| e.to_string())
            .and_then(|t| t.render("delims", &value).map_err(|e| e.to_string()));
        expect(&format!("TestDelims {left:?} {right:?}"), got, &format!("Hello, world{l}"));
    }

    // TestTree: a recursive template with "(" ")" delimiters and trimming.
    let tree_template = "\n\t(- define \"tree\" -)\n\t[\n\t\t(- .Val -)\n\t\t(- with .Left -)\n\t\t\t(template \"tree\" . -)\n\t\t(- end -)\n\t\t(- with .Right -)\n\t\t\t(- template \"tree\" . -)\n\t\t(- end -)\n\t]\n\t(- end -)\n";
    fn node(val: i64, left: Option<Value>, right: Option<Value>) -> Value {
        let mut m = BTreeMap::from([("Val".to_string(), Value::int(val))]);
        m.insert("Left".to_string(), left.unwrap_or(Value::Nil));
        m.insert("Right".to_string(), right.unwrap_or(Value::Nil));
        Value::map(m)
    }
    let tree = node(
        1,
        Some(node(2, Some(node(3, Some(node(4, None, None)), None)), Some(node(5, Some(node(6, None, None)), None)))),
        Some(node(7, Some(node(8, Some(node(9, None, None)), None)), Some(node(10, Some(node(11, None, None)), None)))),
    );
    let mut t = Template::new("root");
    t.delims("(", ")");
    let got = t
        .parse("root", tree_template)
        .map_err(|e| e.to_string())
        .and_then(|t| t.render("tree", &tree).map_err(|e| e.to_string()));
    expect("TestTree", got, "[1[2[3[4]][5[6]]][7[8[9]][10[11]]]]");

    // TestBlock: a block, then an overlay parsed into a clone.
    let mut t = Template::new("outer");
    t.parse("outer", r#"a({{block "inner" .}}bar({{.}})baz{{end}})b"#).unwrap();
    let mut t2 = t.clone();
    t2.parse("overlay", r#"{{define "inner"}}foo({{.}})bar{{end}}"#).unwrap();
    expect(
        "TestBlock original",
        t.render("outer", &Value::from("hello")).map_err(|e| e.to_string()),
        "a(bar(hello)baz)b",
    );
    expect(
        "TestBlock overlay",
        t2.render("outer", &Value::from("goodbye")).map_err(|e| e.to_string()),
        "a(foo(goodbye)bar)b",
    );

    // TestMessageForExecuteEmpty.
    let t = Template::new("empty");
    let got = match t.render("empty", &Value::int(0)) {
        Err(e) => Ok(e.to_string()),
        Ok(out) => Ok(format!("output {out:?}")),
    };
    expect("TestMessageForExecuteEmpty", got, r#"template: empty: "empty" is an incomplete or empty template"#);

    // TestFinalForPrintf, TestIssue31810.
    let mut t = Template::new("");
    t.parse("", r#"{{"x" | printf}}"#).unwrap();
    expect("TestFinalForPrintf", t.render("", &Value::int(0)).map_err(|e| e.to_string()), "x");
    let mut t = Template::new("");
    t.parse("", "{{ (.)  }}").unwrap();
    expect("TestIssue31810", t.render("", &Value::from("result")).map_err(|e| e.to_string()), "result");

    // TestMaxExecDepth.
    let mut t = Template::new("tmpl");
    t.parse("tmpl", r#"{{template "tmpl" .}}"#).unwrap();
    let got = match t.render("tmpl", &Value::Nil) {
        Err(e) if e.to_string().contains("exceeded maximum template depth") => "depth error".to_string(),
        other => format!("{other:?}"),
    };
    expect("TestMaxExecDepth", Ok(got), "depth error");

    // TestKeywordsAndFuncs: with a function named break, break is a function.
    let mut t = Template::new("");
    t.add_func(
        "break",
        bosun_gotemplate::Function::new([bosun_gotemplate::Type::Any], bosun_gotemplate::Type::Any, |_, a| {
            Ok(a[0].clone())
        }),
    );
    let with_func = t.parse("", "{{range .X}}{{break 20}}{{end}}").is_ok();
    let without_func = Template::new("").parse("", "{{range .X}}{{break 20}}{{end}}").is_err();
    expect("TestKeywordsAndFuncs", Ok(format!("{with_func} {without_func}")), "true true");

    // TestJSEscaping.
    for (input, want) in [
        ("a", "a"),
        ("'foo", r"\'foo"),
        (r#"Go "jump" \"#, r#"Go \"jump\" \\"#),
        (r#"Yukihiro says "今日は世界""#, r#"Yukihiro says \"今日は世界\""#),
        ("unprintable \u{FFFE}", r"unprintable \uFFFE"),
        ("<html>", r"\u003Chtml\u003E"),
        ("no = in attributes", r"no \u003D in attributes"),
        ("&#x27; does not become HTML entity", r"\u0026#x27; does not become HTML entity"),
    ] {
        let mut t = Template::new("js");
        t.parse("js", "{{js .}}").unwrap();
        expect(
            &format!("TestJSEscaping {input:?}"),
            t.render("js", &Value::from(input)).map_err(|e| e.to_string()),
            want,
        );
    }
    outcomes
}

#[test]
fn go_text_template_conformance() {
    let mut outcomes = exec_outcomes();
    outcomes.extend(cmp_outcomes());
    outcomes.extend(interface_value_outcomes());
    outcomes.extend(error_message_outcomes());
    outcomes.extend(parse_outcomes());
    outcomes.extend(other_outcomes());

    let known: BTreeMap<&str, &str> = KNOWN_FAILURES.iter().copied().collect();
    let mut problems = Vec::new();
    let mut names = std::collections::BTreeSet::new();
    for outcome in &outcomes {
        assert!(names.insert(outcome.name.as_str()), "duplicate case name {}", outcome.name);
        match (&outcome.failure, known.contains_key(outcome.name.as_str())) {
            (Some(failure), false) => problems.push(format!("FAILS (unlisted): {} — {failure}", outcome.name)),
            (None, true) => problems.push(format!("PASSES but listed as failing: {}", outcome.name)),
            _ => {}
        }
    }
    for name in known.keys() {
        if !names.contains(name) {
            problems.push(format!("listed failure names no case: {name}"));
        }
    }
    let passed = outcomes.iter().filter(|o| o.failure.is_none()).count();
    println!("go conformance: {passed} of {} cases pass", outcomes.len());
    for group in ["exec/", "cmp ", "interface values ", "error message ", "parse ", "Test"] {
        let in_group: Vec<&Outcome> = outcomes.iter().filter(|o| o.name.starts_with(group)).collect();
        let ok = in_group.iter().filter(|o| o.failure.is_none()).count();
        println!("  {group:<18} {ok} of {}", in_group.len());
    }
    assert!(problems.is_empty(), "{}\n", problems.join("\n"));
}
