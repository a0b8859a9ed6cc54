//! The syntax of names, label keys and label values, with upstream's rules and messages
//! (apimachinery `util/validation`): used by object validation, selectors, CRDs and
//! authentication alike.

/// How object names of a resource are validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// DNS-1123 subdomain (most kinds).
    Subdomain,
    /// DNS-1123 label (namespaces).
    Label,
    /// DNS-1035 label (services).
    Dns1035Label,
    /// Any path segment (RBAC kinds).
    PathSegment,
}

const DNS1123_LABEL_MAX: usize = 63;
const DNS1123_SUBDOMAIN_MAX: usize = 253;
const QUALIFIED_NAME_MAX: usize = 63;
const LABEL_VALUE_MAX: usize = 63;
const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1035_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
const QUALIFIED_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

fn is_lower_alnum(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| is_lower_alnum(c) || c == '-')
        && s.starts_with(is_lower_alnum)
        && s.ends_with(is_lower_alnum)
}

/// DNS-1123 subdomain check; the errors are upstream's messages.
pub fn dns1123_subdomain(name: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if name.len() > DNS1123_SUBDOMAIN_MAX {
        errors.push(format!("must be no more than {DNS1123_SUBDOMAIN_MAX} characters"));
    }
    if !name.split('.').all(is_dns_label) {
        errors.push(SUBDOMAIN_MSG.to_string());
    }
    errors
}

/// DNS-1123 label check.
pub fn dns1123_label(name: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if name.len() > DNS1123_LABEL_MAX {
        errors.push(format!("must be no more than {DNS1123_LABEL_MAX} characters"));
    }
    if !is_dns_label(name) {
        errors.push(LABEL_MSG.to_string());
    }
    errors
}

fn dns1035_label(name: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if name.len() > DNS1123_LABEL_MAX {
        errors.push(format!("must be no more than {DNS1123_LABEL_MAX} characters"));
    }
    if !is_dns_label(name) || !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        errors.push(DNS1035_MSG.to_string());
    }
    errors
}

fn path_segment(name: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if name == "." || name == ".." {
        errors.push(format!("may not be '{name}'"));
    }
    for bad in ["/", "%"] {
        if name.contains(bad) {
            errors.push(format!("may not contain '{bad}'"));
        }
    }
    errors
}

/// Validates a name by the resource's rule.
pub fn name(rule: NameRule, name: &str) -> Vec<String> {
    match rule {
        NameRule::Subdomain => dns1123_subdomain(name),
        NameRule::Label => dns1123_label(name),
        NameRule::Dns1035Label => dns1035_label(name),
        NameRule::PathSegment => path_segment(name),
    }
}

fn is_qualified_part(s: &str) -> bool {
    let alnum = |c: char| c.is_ascii_alphanumeric();
    !s.is_empty() && s.chars().all(|c| alnum(c) || "-_.".contains(c)) && s.starts_with(alnum) && s.ends_with(alnum)
}

/// A qualified name (`prefix/name` or `name`), as label and annotation keys and finalizers are.
pub fn qualified_name(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        if prefix.is_empty() {
            return Err("prefix part must be non-empty".to_string());
        }
        if let Some(first) = dns1123_subdomain(prefix).first() {
            return Err(format!("prefix part {first}"));
        }
    }
    if name.is_empty() {
        return Err("name part must be non-empty".to_string());
    }
    if name.len() > QUALIFIED_NAME_MAX {
        return Err(format!("name part must be no more than {QUALIFIED_NAME_MAX} characters"));
    }
    if !is_qualified_part(name) {
        return Err(format!("name part {QUALIFIED_MSG}"));
    }
    Ok(())
}

/// A label value (may be empty).
pub fn label_value(value: &str) -> Result<(), String> {
    if value.len() > LABEL_VALUE_MAX {
        return Err(format!("must be no more than {LABEL_VALUE_MAX} characters"));
    }
    if !value.is_empty() && !is_qualified_part(value) {
        return Err(LABEL_VALUE_MSG.to_string());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_each_rule() {
        let cases = [
            (NameRule::Subdomain, "web.example", true),
            (NameRule::Subdomain, "Web", false),
            (NameRule::Subdomain, "-web", false),
            (NameRule::Subdomain, "web_1", false),
            (NameRule::Label, "web.example", false),
            (NameRule::Label, "123-abc", true),
            (NameRule::Dns1035Label, "123-abc", false),
            (NameRule::Dns1035Label, "abc-123", true),
            (NameRule::PathSegment, "system:controller:x", true),
            (NameRule::PathSegment, "a/b", false),
        ];
        for (rule, candidate, ok) in cases {
            assert_eq!(name(rule, candidate).is_empty(), ok, "{rule:?} {candidate}");
        }
        assert_eq!(name(NameRule::Subdomain, &"a".repeat(254))[0], "must be no more than 253 characters");
    }

    #[test]
    fn qualified_names_and_label_values() {
        assert!(qualified_name("app.kubernetes.io/name").is_ok());
        assert!(qualified_name("kubernetes").is_ok());
        assert!(qualified_name("/x").is_err());
        assert!(qualified_name("Example.com/x").is_err());
        assert!(qualified_name("a b").is_err());
        assert!(label_value("").is_ok());
        assert!(label_value("v1.2_3").is_ok());
        assert!(label_value("-x").is_err());
        assert!(label_value(&"x".repeat(64)).is_err());
    }
}
