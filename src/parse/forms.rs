//! Form fields: the named values a form holds (a DOCX content control or
//! legacy form field, a PDF AcroForm field), kept as key-value metadata of
//! the section they stand in, so that "documents whose *Auto-renewal* box
//! is ticked" is an exact lookup rather than a search for a glyph.
//!
//! A field is kept by the name its author gave it (a content control's
//! title, else its tag; a form field's bookmark name; an AcroForm field's
//! full dotted name). Fields without a name are not kept: nothing could
//! ask for them.

use serde::{Deserialize, Serialize};

use super::tree::collapse_whitespace;

/// Longest field name kept, in characters: a name is a label, and a
/// longer one is not worth its space in every citation.
const MAX_NAME_CHARS: usize = 200;
/// Longest text value kept, in characters (a free-text field can hold a
/// page; the text itself is in the document's body when it is shown).
const MAX_VALUE_CHARS: usize = 1000;

/// A named value of a form.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct FormField {
    /// The name its author gave it.
    pub name: String,
    pub value: FieldValue,
}

/// What a form field holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum FieldValue {
    /// A check box: ticked or not.
    Checked(bool),
    /// Text, a choice or a date, as the form shows it; empty for a field
    /// left blank (or showing its placeholder).
    Text(String),
}

impl FormField {
    /// A field named `name` (whitespace collapsed, cut to a label's
    /// length); `None` for a blank name.
    pub fn new(name: &str, value: FieldValue) -> Option<FormField> {
        let name: String = collapse_whitespace(name)
            .chars()
            .take(MAX_NAME_CHARS)
            .collect();
        if name.is_empty() {
            return None;
        }
        let value = match value {
            FieldValue::Text(text) => FieldValue::Text(
                collapse_whitespace(&text)
                    .chars()
                    .take(MAX_VALUE_CHARS)
                    .collect(),
            ),
            checked => checked,
        };
        Some(FormField { name, value })
    }

    /// Whether the field is named `name`, ignoring case and spacing.
    pub fn is_named(&self, name: &str) -> bool {
        self.name
            .to_lowercase()
            .eq(&collapse_whitespace(name).to_lowercase())
    }
}

impl FieldValue {
    /// Whether the value is what `wanted` says: for a check box, `true`,
    /// `yes`, `checked` or `x` against `false`, `no`, `unchecked` or an
    /// empty string; for text, the same text ignoring case and spacing.
    pub fn matches(&self, wanted: &str) -> bool {
        match self {
            FieldValue::Checked(checked) => checked_word(wanted) == Some(*checked),
            FieldValue::Text(text) => {
                text.to_lowercase() == collapse_whitespace(wanted).to_lowercase()
            }
        }
    }
}

impl std::fmt::Display for FieldValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FieldValue::Checked(true) => f.write_str("☒"),
            FieldValue::Checked(false) => f.write_str("☐"),
            FieldValue::Text(text) => f.write_str(text),
        }
    }
}

/// The state a word gives a check box, if it names one.
fn checked_word(word: &str) -> Option<bool> {
    match word.trim().to_lowercase().as_str() {
        "true" | "yes" | "checked" | "x" | "on" | "☒" | "☑" => Some(true),
        "false" | "no" | "unchecked" | "off" | "" | "☐" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_is_named_and_matched_as_a_person_writes_it() {
        assert!(FormField::new("  ", FieldValue::Checked(true)).is_none());
        let renewal =
            FormField::new("Auto-renewal\n", FieldValue::Checked(true)).expect("a named field");
        assert_eq!(renewal.name, "Auto-renewal");
        assert!(renewal.is_named("auto-renewal"));
        for yes in ["true", "Yes", "checked", "x", "☒"] {
            assert!(renewal.value.matches(yes), "{yes}");
        }
        assert!(!renewal.value.matches("no") && !renewal.value.matches("maybe"));
        let party = FormField::new("Party", FieldValue::Text("  Acme   Corp ".into())).unwrap();
        assert_eq!(party.value, FieldValue::Text("Acme Corp".into()));
        assert!(party.value.matches("acme corp") && !party.value.matches("Acme"));
        assert!(!FieldValue::Checked(false).matches("maybe"));
        assert!(FieldValue::Checked(false).matches("unchecked"));
    }
}
