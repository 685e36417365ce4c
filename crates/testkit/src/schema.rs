//! JSON documents checked against a JSON Schema, as every suite checks the product's
//! outputs (run results, exports, comparisons, plans, replay reports) against the
//! schemas it commits and prints.

/// What is wrong with `doc` against `schema` (a JSON Schema, as text): one line per
/// violation, `what at /where`; empty when `doc` is valid. A schema that is not JSON
/// or does not compile fails the test: it is the product's, and must be sound.
pub fn violations(schema: &str, doc: &serde_json::Value) -> Vec<String> {
    let schema: serde_json::Value = serde_json::from_str(schema)
        .unwrap_or_else(|e| panic!("the schema is not JSON: {e}\n{schema}"));
    let validator = jsonschema::validator_for(&schema)
        .unwrap_or_else(|e| panic!("the schema does not compile: {e}"));
    validator
        .iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

/// Fails the test, listing every violation and the document, unless `doc` is valid
/// against `schema` (a JSON Schema, as text).
pub fn assert_valid(schema: &str, doc: &serde_json::Value) {
    let errors = violations(schema, doc);
    assert!(
        errors.is_empty(),
        "schema violations: {errors:#?}\nin {doc:#}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHEMA: &str = r#"{
        "type": "object",
        "required": ["format"],
        "properties": {"format": {"const": "x"}, "n": {"type": "integer"}}
    }"#;

    #[test]
    fn a_valid_document_has_no_violations() {
        assert_valid(SCHEMA, &serde_json::json!({"format": "x", "n": 3}));
    }

    #[test]
    fn each_violation_is_named_with_where_it_is() {
        let doc = serde_json::json!({"format": "y", "n": "three"});
        let errors = violations(SCHEMA, &doc);
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors.iter().any(|e| e.ends_with(" at /n")), "{errors:?}");
        let failed = std::panic::catch_unwind(|| assert_valid(SCHEMA, &doc)).is_err();
        assert!(failed, "an invalid document passed");
    }
}
