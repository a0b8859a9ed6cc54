//! CEL validation rules of custom resources (`x-kubernetes-validations`), compiled when a CRD is
//! written and evaluated on every write of its objects, as the apiextensions server does:
//! `self` is the value at the rule's schema node, `oldSelf` the value it replaces (transition
//! rules run only on updates that have one, unless `optionalOldSelf`), a failing rule is a 422
//! cause with its `message` (or `messageExpression`, or `failed rule: <rule>`), `reason` and
//! `fieldPath`. The engine is the `cel` crate; evaluation is bounded by a cost limit counted in
//! the values a rule sees, not upstream's static estimate.

use std::sync::Arc;

use bosun_core::cel::to_cel;
use cel::{Context, Program, objects::OptionalValue};
use serde_json::{Value, json};

use crate::error::FieldError;

/// Upstream's limit on the size of the values one evaluation may see (`PerCallLimit` counts
/// operations; a rule over a value larger than this is refused the same way).
const COST_LIMIT: usize = 1_000_000;

/// One compiled rule.
#[derive(Clone)]
pub struct Rule {
    source: String,
    program: Arc<Program>,
    message: Option<String>,
    message_expression: Option<Arc<Program>>,
    reason: Option<String>,
    field_path: Option<String>,
    transition: bool,
    optional_old_self: bool,
}

impl std::fmt::Debug for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rule").field("source", &self.source).finish_non_exhaustive()
    }
}

/// How many values a JSON value holds (what evaluating over it may cost at most, roughly).
fn size(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(size).sum::<usize>(),
        Value::Object(map) => 1 + map.values().map(size).sum::<usize>(),
        _ => 1,
    }
}

/// Compiles the `x-kubernetes-validations` of a schema node at `path`; compilation failures are
/// field errors of the CRD.
pub fn compile(validations: Option<&Value>, path: &str, errors: &mut Vec<FieldError>) -> Vec<Rule> {
    let mut rules = Vec::new();
    for (i, validation) in validations.and_then(Value::as_array).into_iter().flatten().enumerate() {
        let at = format!("{path}.x-kubernetes-validations[{i}]");
        let text = |key: &str| validation.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()).map(String::from);
        let Some(source) = text("rule") else {
            errors.push(FieldError::required(format!("{at}.rule"), ""));
            continue;
        };
        let program = match Program::compile(&source) {
            Ok(program) => program,
            Err(error) => {
                errors.push(FieldError::invalid(
                    format!("{at}.rule"),
                    json!(source),
                    format!("compilation failed: {error}"),
                ));
                continue;
            }
        };
        let message_expression = match text("messageExpression").map(|e| Program::compile(&e)) {
            None => None,
            Some(Ok(program)) => Some(Arc::new(program)),
            Some(Err(error)) => {
                let expression = text("messageExpression").unwrap_or_default();
                errors.push(FieldError::invalid(
                    format!("{at}.messageExpression"),
                    json!(expression),
                    format!("messageExpression compilation failed: {error}"),
                ));
                continue;
            }
        };
        let transition = program.references().has_variable("oldSelf");
        rules.push(Rule {
            source,
            program: Arc::new(program),
            message: text("message"),
            message_expression,
            reason: text("reason"),
            field_path: text("fieldPath"),
            transition,
            optional_old_self: validation.get("optionalOldSelf").and_then(Value::as_bool) == Some(true),
        });
    }
    rules
}

/// Evaluates the rules of a node whose schema type is `schema_type` on `value` (replacing
/// `old`, on updates), at `path`.
pub fn evaluate(
    rules: &[Rule],
    value: &Value,
    old: Option<&Value>,
    schema_type: &str,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    if rules.is_empty() {
        return;
    }
    let shown_path = if path.is_empty() { "<nil>" } else { path };
    let too_costly = size(value) + old.map_or(0, size) > COST_LIMIT;
    for rule in rules {
        if rule.transition && old.is_none() && !rule.optional_old_self {
            continue;
        }
        let field = match &rule.field_path {
            Some(relative) => format!("{}{relative}", if path.is_empty() { "" } else { path }),
            None => shown_path.to_string(),
        };
        if too_costly {
            errors.push(FieldError::invalid(
                field,
                json!(schema_type),
                "validation failed due to running out of cost budget, no further validation rules will be run",
            ));
            return;
        }
        let mut context = Context::default();
        context.add_variable_from_value("self", to_cel(value));
        if rule.transition {
            context.add_variable_from_value("oldSelf", old_self(rule, old));
        }
        match rule.program.execute(&context) {
            Ok(cel::Value::Bool(true)) => {}
            Ok(cel::Value::Bool(false)) => errors.push(failure(rule, &context, &field, schema_type)),
            Ok(other) => errors.push(FieldError::invalid(
                field,
                json!(schema_type),
                format!("rule evaluation error: expected a bool, got {other:?}"),
            )),
            Err(error) => {
                errors.push(FieldError::invalid(field, json!(schema_type), format!("rule evaluation error: {error}")))
            }
        }
    }
}

/// What `oldSelf` is for a transition rule: the old value, or with `optionalOldSelf` an
/// optional that is empty on creates (rules then use `oldSelf.hasValue()` and `orValue`).
fn old_self(rule: &Rule, old: Option<&Value>) -> cel::Value {
    if !rule.optional_old_self {
        return old.map_or(cel::Value::Null, to_cel);
    }
    let optional = match old {
        Some(old) => OptionalValue::of(to_cel(old)),
        None => OptionalValue::none(),
    };
    cel::Value::Opaque(Arc::new(optional))
}

/// The error of a rule that evaluated to false, as upstream words it.
fn failure(rule: &Rule, context: &Context, field: &str, schema_type: &str) -> FieldError {
    let from_expression = rule.message_expression.as_ref().and_then(|expression| match expression.execute(context) {
        Ok(cel::Value::String(text)) if !text.trim().is_empty() => Some(text.to_string()),
        _ => None,
    });
    let message = from_expression
        .or_else(|| rule.message.clone())
        .unwrap_or_else(|| format!("failed rule: {}", rule.source.trim()));
    match rule.reason.as_deref() {
        Some("FieldValueForbidden") => FieldError::forbidden(field, message),
        Some("FieldValueRequired") => FieldError::required(field, message),
        Some("FieldValueDuplicate") => FieldError::duplicate(field, json!(schema_type)),
        _ => FieldError::invalid(field, json!(schema_type), message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(validations: Value) -> Vec<Rule> {
        let mut errors = Vec::new();
        let compiled = compile(Some(&validations), "spec", &mut errors);
        assert!(errors.is_empty(), "{errors:?}");
        compiled
    }

    fn messages(rules: &[Rule], value: Value, old: Option<Value>) -> Vec<String> {
        let mut errors = Vec::new();
        evaluate(rules, &value, old.as_ref(), "object", "spec", &mut errors);
        errors.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn rules_fail_with_their_message_reason_and_field() {
        let compiled = rules(json!([
            {"rule": "self.replicas <= self.max", "message": "replicas must not exceed max"},
            {"rule": "self.name.startsWith('app-')", "fieldPath": ".name", "reason": "FieldValueForbidden", "message": "names start with app-"},
            {"rule": "size(self.tags) < 3", "messageExpression": "'too many tags: ' + string(size(self.tags))"},
            {"rule": "has(self.owner)"},
        ]));
        let good = json!({"replicas": 2, "max": 3, "name": "app-web", "tags": ["a"], "owner": "ops"});
        assert_eq!(messages(&compiled, good, None), Vec::<String>::new());
        let bad = json!({"replicas": 5, "max": 3, "name": "web", "tags": ["a", "b", "c"]});
        assert_eq!(
            messages(&compiled, bad, None),
            [
                r#"spec: Invalid value: "object": replicas must not exceed max"#,
                "spec.name: Forbidden: names start with app-",
                r#"spec: Invalid value: "object": too many tags: 3"#,
                r#"spec: Invalid value: "object": failed rule: has(self.owner)"#,
            ]
        );
    }

    #[test]
    fn transition_rules_see_the_old_value_only_on_updates() {
        let compiled = rules(json!([{"rule": "self.size >= oldSelf.size", "message": "may only grow"}]));
        assert_eq!(messages(&compiled, json!({"size": 1}), None), Vec::<String>::new(), "not on create");
        assert_eq!(messages(&compiled, json!({"size": 3}), Some(json!({"size": 2}))), Vec::<String>::new());
        assert_eq!(
            messages(&compiled, json!({"size": 1}), Some(json!({"size": 2}))),
            [r#"spec: Invalid value: "object": may only grow"#]
        );
    }

    #[test]
    fn optional_old_self_is_an_optional_that_is_empty_on_creates() {
        let compiled = rules(json!([{
            "rule": "!oldSelf.hasValue() || self.size >= oldSelf.value().size",
            "optionalOldSelf": true,
            "message": "may only grow",
        }]));
        assert_eq!(messages(&compiled, json!({"size": 1}), None), Vec::<String>::new(), "runs on create");
        assert_eq!(messages(&compiled, json!({"size": 3}), Some(json!({"size": 2}))), Vec::<String>::new());
        assert_eq!(
            messages(&compiled, json!({"size": 1}), Some(json!({"size": 2}))),
            [r#"spec: Invalid value: "object": may only grow"#]
        );
        let create_only =
            rules(json!([{"rule": "oldSelf.hasValue()", "optionalOldSelf": true, "message": "no creates"}]));
        assert_eq!(messages(&create_only, json!({}), None), [r#"spec: Invalid value: "object": no creates"#]);
    }

    #[test]
    fn rules_that_do_not_compile_are_refused_with_the_crd() {
        let mut errors = Vec::new();
        compile(Some(&json!([{"rule": "self.a >"}])), "schema.properties[spec]", &mut errors);
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].field, "schema.properties[spec].x-kubernetes-validations[0].rule");
        assert!(errors[0].to_string().contains("compilation failed: ERROR: <input>:1:"), "{}", errors[0]);
    }
}
