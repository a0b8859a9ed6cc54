//! Templates nest as deeply as Go allows (10000 nested parentheses, blocks without limit,
//! recursive templates to the configured depth) without overflowing a small thread stack.

use bosun_gotemplate::{Template, Value};

fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new().stack_size(256 * 1024).spawn(f).unwrap().join().unwrap()
}

#[test]
fn go_nesting_limits_hold_on_a_small_stack() {
    let out = on_small_stack(|| {
        let depth = 9_999;
        let parens = format!("{{{{ {}1{} }}}}", "(".repeat(depth), ")".repeat(depth));
        let ifs = format!("{}x{}", "{{if true}}".repeat(depth), "{{end}}".repeat(depth));
        let mut t = Template::new("t");
        t.parse("parens", &parens).unwrap();
        t.parse("ifs", &ifs).unwrap();
        let too_deep = format!("{{{{ {}1{} }}}}", "(".repeat(depth + 2), ")".repeat(depth + 2));
        let error = t.parse("too_deep", &too_deep).unwrap_err().to_string();
        (t.render("parens", &Value::Nil).unwrap(), t.render("ifs", &Value::Nil).unwrap(), error)
    });
    assert_eq!(out.0, "1");
    assert_eq!(out.1, "x");
    assert_eq!(out.2, "template: too_deep:1: max expression depth exceeded");
}

#[test]
fn recursive_templates_stop_at_the_depth_limit_on_a_small_stack() {
    let error = on_small_stack(|| {
        let mut t = Template::new("t");
        t.set_max_depth(20_000);
        t.parse("t", r#"{{template "t" .}}"#).unwrap();
        t.render("t", &Value::Nil).unwrap_err().to_string()
    });
    assert_eq!(
        error,
        r#"template: t:1:11: executing "t" at <{{template "t" .}}>: exceeded maximum template depth (20000)"#
    );
}
