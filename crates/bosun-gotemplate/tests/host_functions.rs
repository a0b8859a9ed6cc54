//! The host API as bosun-helm will use it: functions registered from outside that re-enter the
//! engine (Helm's `include` and `tpl`), keep per-execution state, and fail with Go's wording.

use std::collections::HashMap;

use bosun_gotemplate::{Context, Error, FuncError, Function, MissingKey, Template, Type, Value, sprig};

/// Helm's limit on nested includes of one name.
const RECURSION_MAX: usize = 1000;

/// Helm's `include`: executes a named template of the set being executed, counting nesting
/// by name in per-execution state.
fn include(ctx: &mut Context<'_>, args: Vec<Value>) -> Result<Value, FuncError> {
    let name = args[0].as_str().unwrap_or_default().to_string();
    let depth = ctx.local::<HashMap<String, usize>>().entry(name.clone()).or_default();
    if *depth > RECURSION_MAX {
        return Err(FuncError::new(format!(
            "rendering template has a nested reference name: {name}: unable to execute template"
        )));
    }
    *depth += 1;
    let result = ctx.execute_template(&name, &args[1]);
    *ctx.local::<HashMap<String, usize>>().get_mut(&name).unwrap() -= 1;
    Ok(Value::from(result?))
}

/// Helm's `tpl`: parses a string into a clone of the set (so it sees every define) and runs it.
fn tpl(ctx: &mut Context<'_>, args: Vec<Value>) -> Result<Value, FuncError> {
    let mut clone = ctx.template().clone();
    let name = ctx.template().name().to_string();
    clone.parse(&name, args[0].as_str().unwrap_or_default())?;
    let out = ctx.execute_in(&clone, &name, &args[1]).map_err(|e| {
        FuncError::new(format!(
            "error during tpl function execution for {:?}: {e}",
            args[0].as_str().unwrap_or_default()
        ))
    })?;
    Ok(Value::from(out.replace("<no value>", "")))
}

fn helm_like() -> Template {
    let mut t = Template::new("gotpl");
    t.add_funcs(sprig::functions());
    t.add_func("include", Function::new([Type::String, Type::Any], Type::String, include));
    t.add_func("tpl", Function::new([Type::String, Type::Any], Type::String, tpl));
    t.add_func(
        "required",
        Function::new([Type::String, Type::Any], Type::Any, |_, a| {
            if a[1].is_nil() || a[1].as_str() == Some("") {
                return Err(FuncError::new(a[0].as_str().unwrap_or_default()));
            }
            Ok(a[1].clone())
        }),
    );
    t.set_missing_key(MissingKey::Zero);
    t
}

fn values(json: &str) -> Value {
    Value::from(serde_json::from_str::<serde_json::Value>(json).unwrap())
}

#[test]
fn include_executes_a_define_of_another_file_with_the_given_dot() {
    let mut t = helm_like();
    t.parse("chart/templates/_helpers.tpl", r#"{{- define "chart.name" -}}{{ .Values.name | trunc 5 }}{{- end -}}"#)
        .unwrap();
    t.parse("chart/templates/cm.yaml", "name: {{ include \"chart.name\" . | upper }}\nlabels:\n{{- range $i := until 2 }}\n  l{{ $i }}: {{ include \"chart.name\" $ }}{{ end }}").unwrap();
    let out = t.render("chart/templates/cm.yaml", &values(r#"{"Values": {"name": "frontend"}}"#)).unwrap();
    assert_eq!(out, "name: FRONT\nlabels:\n  l0: front\n  l1: front");
}

#[test]
fn tpl_sees_the_sets_defines_and_its_own() {
    let mut t = helm_like();
    t.parse("_helpers.tpl", r#"{{ define "greeting" }}hello {{ . }}{{ end }}"#).unwrap();
    t.parse("main", r#"{{ tpl .Values.text .Values }}"#).unwrap();
    let data = values(
        r#"{"Values": {"text": "{{ define \"x\" }}[{{ . }}]{{ end }}{{ include \"greeting\" .who }} {{ include \"x\" .who }} {{ .missing }}", "who": "world"}}"#,
    );
    assert_eq!(t.render("main", &data).unwrap(), "hello world [world] ");
    // The defines tpl parsed went into a clone, not into the set.
    assert!(!t.has_template("x"));
}

#[test]
fn errors_inside_include_name_the_inner_template_and_the_call() {
    let mut t = helm_like();
    t.parse("_helpers.tpl", r#"{{ define "image" }}{{ required "image.tag is required" .tag }}{{ end }}"#).unwrap();
    t.parse("deployment.yaml", "kind: Deployment\nimage: {{ include \"image\" .Values.image }}").unwrap();
    let err = t.render("deployment.yaml", &values(r#"{"Values": {"image": {"repository": "nginx"}}}"#)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "template: deployment.yaml:2:10: executing \"deployment.yaml\" at <include \"image\" .Values.image>: error calling include: \
         template: _helpers.tpl:1:23: executing \"image\" at <required \"image.tag is required\" .tag>: error calling required: image.tag is required"
    );
}

#[test]
fn errors_carry_their_location_and_the_nested_execution_that_caused_them() {
    let mut t = helm_like();
    t.parse("_helpers.tpl", "{{ define \"image\" }}\n  {{ required \"image.tag is required\" .tag }}{{ end }}")
        .unwrap();
    t.parse("deployment.yaml", "kind: Deployment\nimage: {{ include \"image\" .Values.image }}").unwrap();
    let err = t.render("deployment.yaml", &values(r#"{"Values": {"image": {}}}"#)).unwrap_err();
    let Error::Exec { trace: Some(outer), .. } = &err else { panic!("{err:?}") };
    assert_eq!(
        (outer.file.as_str(), outer.line, outer.column, outer.node.as_str(), outer.reason.as_str()),
        ("deployment.yaml", 2, 10, "include \"image\" .Values.image", "error calling include")
    );
    let Error::Exec { trace: Some(inner), .. } = err.innermost() else { panic!("{err:?}") };
    assert_eq!(
        (inner.file.as_str(), inner.line, inner.column, inner.reason.as_str()),
        ("_helpers.tpl", 2, 5, "error calling required: image.tag is required")
    );
    assert!(inner.cause.is_none());
    let err = t.parse("broken.yaml", "a\n{{ .x }").unwrap_err();
    let Error::Parse { file, line, reason, .. } = &err else { panic!("{err:?}") };
    assert_eq!((file.as_str(), *line, reason.as_str()), ("broken.yaml", 2, "unexpected \"}\" in operand"));
}

#[test]
fn recursive_include_stops_at_helms_limit() {
    let mut t = helm_like();
    t.set_max_depth(2 * RECURSION_MAX + 10);
    t.parse("loop.tpl", r#"{{ define "loop" }}{{ include "loop" . }}{{ end }}"#).unwrap();
    t.parse("main", r#"{{ include "loop" . }}"#).unwrap();
    let result = t.render("main", &Value::Nil).unwrap_err().to_string();
    assert!(
        result.ends_with("rendering template has a nested reference name: loop: unable to execute template"),
        "{result}"
    );
}

#[test]
fn missingkey_zero_is_helms_nil_pointer_error_on_a_missing_parent() {
    let mut t = helm_like();
    t.parse("a", "{{ .Values.image.tag }}").unwrap();
    let err = t.render("a", &values(r#"{"Values": {}}"#)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "template: a:1:10: executing \"a\" at <.Values.image.tag>: nil pointer evaluating interface {}.tag"
    );
    t.parse("b", "[{{ .Values.image }}]").unwrap();
    assert_eq!(t.render("b", &values(r#"{"Values": {}}"#)).unwrap(), "[<no value>]");
    t.set_missing_key(MissingKey::Error);
    let err = t.render("b", &values(r#"{"Values": {}}"#)).unwrap_err();
    assert!(err.to_string().ends_with("map has no entry for key \"image\""), "{err}");
}

#[test]
fn a_rendered_set_is_shared_across_threads() {
    let mut t = helm_like();
    t.parse("t", r#"{{ range $i := until 100 }}{{ $i | add 1 }},{{ end }}"#).unwrap();
    let t = std::sync::Arc::new(t);
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let t = t.clone();
            std::thread::spawn(move || t.render("t", &Value::Nil).unwrap())
        })
        .collect();
    let outputs: Vec<String> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert!(outputs.iter().all(|o| o == &outputs[0] && o.starts_with("1,2,3,")));
}
