//! Names bosun derives from other names, which every component that looks for the named thing
//! must derive alike.

use sha2::{Digest, Sha256};

/// The label values bosun puts on children must fit Kubernetes' 63 characters.
const LABEL_VALUE_MAX: usize = 63;

/// The apply target (owner label, inventory `bosun-inventory-<name>`) of one watched object:
/// `<operator>.<object>`, shortened with a hash when longer than a label value may be.
pub fn operator_target(operator: &str, object: &str) -> String {
    let name = format!("{operator}.{object}");
    if name.len() <= LABEL_VALUE_MAX {
        return name;
    }
    let hash = Sha256::digest(name.as_bytes());
    let hex: String = hash.iter().take(5).map(|b| format!("{b:02x}")).collect();
    let mut cut = LABEL_VALUE_MAX - hex.len() - 1;
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}-{hex}", name[..cut].trim_end_matches(['.', '-']))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_names_fit_a_label_value() {
        assert_eq!(operator_target("grafana", "main"), "grafana.main");
        let long = operator_target("grafana", &"x".repeat(80));
        assert_eq!(long.len(), LABEL_VALUE_MAX);
        assert_ne!(long, operator_target("grafana", &"x".repeat(81)), "the hash tells them apart");
    }
}
