//! Health decided by CEL expressions for the objects of one kind, as Flux's `healthCheckExprs`
//! decide it for custom resources kstatus cannot read: the object's top-level fields
//! (`apiVersion`, `kind`, `metadata`, `spec`, `status`) are the expressions' variables;
//! a controller that has not observed the newest generation is still in progress; then
//! `inProgress`, `failed` and `current` are tried in that order, and when none holds the object
//! is in progress.

use std::sync::Arc;

use cel::{Context, Program};
use serde_json::Value;

use super::Health;
use crate::cel::to_cel;

/// Why an expression was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {expression:?} is not valid CEL: {message}")]
pub struct ExpressionError {
    /// Where it was given (`healthCheckExprs[0].current`).
    pub field: String,
    /// The expression.
    pub expression: String,
    /// What is wrong.
    pub message: String,
}

/// One compiled expression and its text.
#[derive(Clone)]
struct Expression {
    text: String,
    program: Arc<Program>,
}

/// The compiled expressions of one kind.
#[derive(Clone)]
pub struct HealthExpressions {
    api_version: String,
    kind: Option<String>,
    current: Expression,
    in_progress: Option<Expression>,
    failed: Option<Expression>,
}

impl std::fmt::Debug for HealthExpressions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HealthExpressions")
            .field("api_version", &self.api_version)
            .field("kind", &self.kind)
            .field("current", &self.current.text)
            .finish_non_exhaustive()
    }
}

/// The text of the three expressions of one kind.
#[derive(Debug, Clone, Copy)]
pub struct ExpressionTexts<'a> {
    /// True when the object is healthy.
    pub current: &'a str,
    /// True while it progresses.
    pub in_progress: Option<&'a str>,
    /// True when it failed.
    pub failed: Option<&'a str>,
}

impl HealthExpressions {
    /// Compiles the expressions for the objects of `api_version` (and `kind`, when given);
    /// `at` names where they were given in errors (`healthCheckExprs[0]`).
    ///
    /// # Errors
    /// An expression is not valid CEL.
    ///
    /// ```
    /// use bosun_core::health::{ExpressionTexts, HealthExpressions, Status};
    /// let texts = ExpressionTexts { current: "status.phase == 'Ready'", in_progress: None, failed: None };
    /// let rule = HealthExpressions::compile("healthCheckExprs[0]", "example.com/v1", Some("Widget"), texts).unwrap();
    /// let widget = serde_json::json!({"apiVersion": "example.com/v1", "kind": "Widget", "status": {"phase": "Ready"}});
    /// assert!(rule.applies_to(&widget));
    /// assert_eq!(rule.evaluate(&widget).status, Status::Current);
    /// ```
    pub fn compile(
        at: &str,
        api_version: &str,
        kind: Option<&str>,
        texts: ExpressionTexts<'_>,
    ) -> Result<HealthExpressions, ExpressionError> {
        let compile = |field: &str, text: &str| {
            Program::compile(text)
                .map(|program| Expression { text: text.to_string(), program: Arc::new(program) })
                .map_err(|error| ExpressionError {
                    field: format!("{at}.{field}"),
                    expression: text.to_string(),
                    message: error.to_string(),
                })
        };
        Ok(HealthExpressions {
            api_version: api_version.to_string(),
            kind: kind.map(str::to_string),
            current: compile("current", texts.current)?,
            in_progress: texts.in_progress.map(|text| compile("inProgress", text)).transpose()?,
            failed: texts.failed.map(|text| compile("failed", text)).transpose()?,
        })
    }

    /// Whether these expressions judge `object` (its `apiVersion`, and its `kind` when given).
    pub fn applies_to(&self, object: &Value) -> bool {
        self.judges(object["apiVersion"].as_str().unwrap_or_default(), object["kind"].as_str().unwrap_or_default())
    }

    /// Whether these expressions judge the objects of `api_version` and `kind`.
    pub fn judges(&self, api_version: &str, kind: &str) -> bool {
        api_version == self.api_version && self.kind.as_deref().is_none_or(|k| k == kind)
    }

    /// The health of `object` as the expressions say.
    pub fn evaluate(&self, object: &Value) -> Health {
        let generation = object.pointer("/metadata/generation").and_then(Value::as_i64);
        let observed = object.pointer("/status/observedGeneration").and_then(Value::as_i64);
        if let (Some(generation), Some(observed)) = (generation, observed)
            && observed < generation
        {
            return Health::progressing(format!("waiting for generation {generation} to be observed"));
        }
        let mut context = Context::default();
        for field in ["apiVersion", "kind", "metadata", "spec", "status"] {
            let value = object.get(field).cloned().unwrap_or_else(|| Value::Object(Default::default()));
            context.add_variable_from_value(field, to_cel(&value));
        }
        let holds = |expression: &Expression| match expression.program.execute(&context) {
            Ok(cel::Value::Bool(holds)) => Ok(holds),
            Ok(other) => Err(format!("{:?} gave {other:?}, not a bool", expression.text)),
            Err(error) => Err(format!("{:?}: {error}", expression.text)),
        };
        let checks = [
            (self.in_progress.as_ref(), "inProgress"),
            (self.failed.as_ref(), "failed"),
            (Some(&self.current), "current"),
        ];
        for (expression, which) in checks {
            let Some(expression) = expression else { continue };
            match holds(expression) {
                Ok(false) => {}
                Ok(true) => {
                    let message = format!("healthCheckExprs: {which} holds: {}", expression.text);
                    return match which {
                        "failed" => Health::failed(true, message),
                        "current" => Health::current(message),
                        _ => Health::progressing(message),
                    };
                }
                Err(error) => return Health::progressing(format!("healthCheckExprs: {error}")),
            }
        }
        Health::progressing(format!("healthCheckExprs: waiting for {}", self.current.text))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::health::Status;

    fn rule() -> HealthExpressions {
        let texts = ExpressionTexts {
            current: "status.conditions.filter(c, c.type == 'Ready').all(c, c.status == 'True')",
            in_progress: Some("status.conditions.exists(c, c.type == 'Reconciling' && c.status == 'True')"),
            failed: Some("status.conditions.exists(c, c.type == 'Stalled' && c.status == 'True')"),
        };
        HealthExpressions::compile("healthCheckExprs[0]", "example.com/v1", Some("Widget"), texts).expect("compiles")
    }

    fn widget(generation: i64, observed: i64, conditions: &[(&str, &str)]) -> Value {
        let conditions: Vec<Value> = conditions.iter().map(|(t, s)| json!({"type": t, "status": s})).collect();
        json!({
            "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "generation": generation},
            "status": {"observedGeneration": observed, "conditions": conditions},
        })
    }

    #[test]
    fn expressions_decide_in_flux_s_order() {
        let rule = rule();
        let cases = [
            (widget(1, 1, &[("Ready", "True")]), Status::Current),
            (widget(1, 1, &[("Ready", "False")]), Status::InProgress),
            (widget(1, 1, &[("Ready", "False"), ("Stalled", "True")]), Status::Failed { terminal: true }),
            // inProgress first, even when failed holds too.
            (widget(1, 1, &[("Reconciling", "True"), ("Stalled", "True")]), Status::InProgress),
            // An old generation observed: in progress whatever the conditions say.
            (widget(2, 1, &[("Ready", "True")]), Status::InProgress),
        ];
        for (object, status) in cases {
            assert_eq!(rule.evaluate(&object).status, status, "{object}");
        }
        // A field the object lacks is an evaluation error: in progress, saying why.
        let bare = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
        let health = rule.evaluate(&bare);
        assert_eq!(health.status, Status::InProgress);
        assert!(health.message.contains("healthCheckExprs"), "{}", health.message);
        assert!(rule.applies_to(&bare));
        assert!(!rule.applies_to(&json!({"apiVersion": "example.com/v1", "kind": "Gadget"})));
    }

    #[test]
    fn invalid_expressions_are_refused_naming_the_field() {
        let texts = ExpressionTexts { current: "status.ready ==", in_progress: None, failed: None };
        let error = HealthExpressions::compile("healthCheckExprs[2]", "example.com/v1", None, texts).expect_err("bad");
        assert_eq!(error.field, "healthCheckExprs[2].current");
        assert!(error.to_string().contains("is not valid CEL"), "{error}");
    }
}
