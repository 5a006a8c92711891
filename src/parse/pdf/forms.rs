//! A PDF's form fields (AcroForm): the field tree under the catalog's
//! `/AcroForm /Fields`, each terminal field read as a [`FormField`] with
//! the page and height of its first widget, so that it can be placed in
//! the section it stands in.
//!
//! A field's values are drawn by its widget annotations, not by the page's
//! content stream, so without this a filled-in form's answers are not in
//! the index at all. Names are the fields' full names (`/T` of each level
//! joined by dots); the field type, value and flags are inherited down the
//! tree as the specification says (ISO 32000-2, 12.7.4). Push buttons and
//! signatures hold no value and are left out. Anything that does not read
//! is left out as well: a form never costs a document its text.

use std::collections::{HashMap, HashSet};

use pdf_oxide::PdfDocument;
use pdf_oxide::object::Object;

use super::metadata::{resolve, string};
use crate::parse::{DocumentTree, FieldValue, FormField, PageLine, collapse_whitespace};

/// Most field-tree nodes visited: a form has hundreds at most, and a
/// hostile file must not make the parse walk millions.
const MAX_NODES: usize = 10_000;
/// Deepest field tree followed.
const MAX_DEPTH: usize = 32;
/// Most pages whose annotations are looked at for widgets' pages.
const MAX_PAGES: usize = 5_000;

/// Field flags (`/Ff`) of a button field.
const RADIO: i64 = 1 << 15;
const PUSH_BUTTON: i64 = 1 << 16;

/// A field and where its first widget stands.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct PlacedField {
    pub field: FormField,
    /// 1-based page of its first widget, when a page lists it.
    pub page: Option<u32>,
    /// The top of that widget, in PDF points from the page's bottom.
    pub top: Option<f32>,
}

/// What a field inherits from its ancestors.
#[derive(Clone, Default)]
struct Inherited {
    name: Vec<String>,
    kind: Option<String>,
    value: Option<Object>,
    flags: i64,
}

/// Reads the form fields of `document`, in the field tree's order.
pub(super) fn read(document: &PdfDocument) -> Vec<PlacedField> {
    let Some(roots) = document
        .catalog()
        .ok()
        .as_ref()
        .and_then(Object::as_dict)
        .and_then(|c| resolve(document, c.get("AcroForm")?))
        .as_ref()
        .and_then(Object::as_dict)
        .and_then(|form| resolve(document, form.get("Fields")?))
        .and_then(|fields| fields.as_array().cloned())
    else {
        return Vec::new();
    };
    let widgets = widget_pages(document);
    let mut fields = Vec::new();
    let mut seen = HashSet::new();
    let mut visited = 0;
    // Depth first, in order: children are pushed reversed, each with the
    // object it resolved to when its parent looked at it.
    let mut stack: Vec<(Object, Option<Object>, Inherited, usize)> = roots
        .into_iter()
        .rev()
        .map(|root| (root, None, Inherited::default(), 0))
        .collect();
    while let Some((node, resolved, inherited, depth)) = stack.pop() {
        visited += 1;
        if visited > MAX_NODES || depth > MAX_DEPTH {
            break;
        }
        let reference = node.as_reference();
        if let Some(r) = reference
            && !seen.insert(r.id)
        {
            continue;
        }
        let Some(object) = resolved.or_else(|| resolve(document, &node)) else {
            continue;
        };
        let Some(dict) = object.as_dict() else {
            continue;
        };
        let mut here = inherited;
        if let Some(part) = dict
            .get("T")
            .and_then(|t| resolve(document, t))
            .and_then(|t| string(&t))
        {
            here.name.push(part);
        }
        if let Some(kind) = dict.get("FT").and_then(Object::as_name) {
            here.kind = Some(kind.to_string());
        }
        if let Some(value) = dict.get("V").and_then(|v| resolve(document, v)) {
            here.value = Some(value);
        }
        if let Some(flags) = dict.get("Ff").and_then(Object::as_integer) {
            here.flags = flags;
        }
        // Each kid resolved once, here.
        let kids: Vec<(Object, Option<Object>)> = dict
            .get("Kids")
            .and_then(|k| resolve(document, k))
            .and_then(|k| k.as_array().cloned())
            .unwrap_or_default()
            .into_iter()
            .map(|kid| {
                let resolved = resolve(document, &kid);
                (kid, resolved)
            })
            .collect();
        // Kids with a name of their own are fields; kids without one are
        // the field's widgets.
        let is_field = |resolved: &Option<Object>| {
            resolved
                .as_ref()
                .and_then(Object::as_dict)
                .is_some_and(|d| d.contains_key("T"))
        };
        if kids.iter().any(|(_, resolved)| is_field(resolved)) {
            for (kid, resolved) in kids.into_iter().rev() {
                if is_field(&resolved) {
                    stack.push((kid, resolved, here.clone(), depth + 1));
                }
            }
            continue;
        }
        let Some(value) = value_of(&here) else {
            continue;
        };
        let Some(field) = FormField::new(&here.name.join("."), value) else {
            continue;
        };
        // The field is its own widget when it has no kids (merged).
        let widget = match kids.into_iter().next() {
            Some((kid, resolved)) => kid.as_reference().map(|r| (r.id, resolved)),
            None => reference.map(|r| (r.id, Some(object.clone()))),
        };
        let page = widget.as_ref().and_then(|(id, _)| widgets.get(id).copied());
        let top = widget
            .and_then(|(_, w)| w)
            .as_ref()
            .and_then(Object::as_dict)
            .and_then(|w| w.get("Rect")?.as_array().cloned())
            .and_then(|rect| {
                let y = |i: usize| rect.get(i).and_then(number);
                Some(y(1)?.max(y(3)?))
            });
        fields.push(PlacedField { field, page, top });
    }
    fields
}

/// The value of a terminal field, by its type; `None` for what holds no
/// value (push buttons, signatures, an unknown type).
fn value_of(field: &Inherited) -> Option<FieldValue> {
    let value = field.value.as_ref();
    let text = |v: &Object| match v {
        Object::Name(name) => Some(name.clone()),
        other => string(other),
    };
    match field.kind.as_deref()? {
        "Tx" => Some(FieldValue::Text(value.and_then(text).unwrap_or_default())),
        // A list box may hold several choices.
        "Ch" => Some(FieldValue::Text(match value {
            Some(Object::Array(items)) => {
                items.iter().filter_map(text).collect::<Vec<_>>().join(", ")
            }
            Some(v) => text(v).unwrap_or_default(),
            None => String::new(),
        })),
        "Btn" if field.flags & PUSH_BUTTON != 0 => None,
        // A radio group's value is the name of the button chosen.
        "Btn" if field.flags & RADIO != 0 => Some(FieldValue::Text(
            value
                .and_then(Object::as_name)
                .filter(|n| *n != "Off")
                .unwrap_or_default()
                .to_string(),
        )),
        "Btn" => Some(FieldValue::Checked(
            value.and_then(Object::as_name).is_some_and(|n| n != "Off"),
        )),
        _ => None,
    }
}

fn number(object: &Object) -> Option<f32> {
    match object {
        Object::Integer(i) => Some(*i as f32),
        Object::Real(r) => Some(*r as f32),
        _ => None,
    }
}

/// The page (1-based) of every annotation a page lists, by object number.
fn widget_pages(document: &PdfDocument) -> HashMap<u32, u32> {
    let mut pages = HashMap::new();
    for index in document.page_indices().take(MAX_PAGES) {
        let Some(annotations) = document
            .get_page(index)
            .ok()
            .as_ref()
            .and_then(Object::as_dict)
            .and_then(|p| resolve(document, p.get("Annots")?))
            .and_then(|a| a.as_array().cloned())
        else {
            continue;
        };
        for annotation in annotations {
            if let Some(r) = annotation.as_reference() {
                pages.entry(r.id).or_insert(index as u32 + 1);
            }
        }
    }
    pages
}

/// Places each field in the section it stands in: the last section whose
/// heading comes before the field's widget in reading order (an earlier
/// page, or higher on the same page). A field no page lists belongs to
/// the document as a whole (the root section).
pub(super) fn place(tree: &mut DocumentTree, fields: Vec<PlacedField>) {
    let starts: Vec<Option<(u32, f32)>> = tree
        .sections
        .iter()
        .map(|s| {
            let page = s.page.or_else(|| s.blocks.first().and_then(|b| b.page))?;
            Some((page, heading_top(&tree.lines, page, &s.heading())))
        })
        .collect();
    for placed in fields {
        let section = match placed.page {
            None => 0,
            Some(page) => {
                let top = placed.top.unwrap_or(f32::INFINITY);
                starts
                    .iter()
                    .rposition(|start| {
                        start.is_some_and(|(p, heading)| p < page || (p == page && heading >= top))
                    })
                    .unwrap_or(0)
            }
        };
        tree.sections[section].fields.push(placed.field);
    }
}

/// How high on `page` the line opening with `heading` stands; the top of
/// the page when no line does (the heading was rebuilt from a bookmark).
fn heading_top(lines: &[PageLine], page: u32, heading: &str) -> f32 {
    let wanted = letters(heading);
    if wanted.is_empty() {
        return f32::INFINITY;
    }
    lines
        .iter()
        .filter(|line| line.page == page)
        .find(|line| {
            let line = letters(&line.text);
            !line.is_empty() && (line.starts_with(&wanted) || wanted.starts_with(&line))
        })
        .map_or(f32::INFINITY, |line| line.bbox[3])
}

/// A text's letters and digits, lower-cased: how a heading is recognised
/// in the line it was read from, whatever spacing the parser mended.
fn letters(text: &str) -> String {
    collapse_whitespace(text)
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{Format, TreeBuilder};

    /// A field lands in the last section whose heading stands before its
    /// widget: higher on the same page, or on an earlier page.
    #[test]
    fn a_field_is_placed_under_the_heading_above_it() {
        let mut builder = TreeBuilder::new(Format::Pdf);
        builder.set_page(Some(1));
        builder.paragraph("Claim form.");
        builder.heading(1, "1. Claimant");
        builder.paragraph("Who claims.");
        builder.heading(1, "2. Loss");
        builder.paragraph("What was lost.");
        builder.set_page(Some(2));
        builder.heading(1, "3. Signature");
        builder.paragraph("Sign here.");
        let mut tree = builder.finish();
        let line = |page, top, text: &str| PageLine {
            page,
            bbox: [72.0, top - 12.0, 300.0, top],
            text: text.to_string(),
            xs: Vec::new(),
        };
        tree.lines = vec![
            line(1, 760.0, "Claim form."),
            line(1, 700.0, "1. Claimant"),
            line(1, 500.0, "2. Loss"),
            line(2, 700.0, "3. Signature"),
        ];
        let field = |name: &str, page, top| PlacedField {
            field: FormField::new(name, FieldValue::Text("x".into())).unwrap(),
            page,
            top,
        };
        place(
            &mut tree,
            vec![
                field("name", Some(1), Some(650.0)),
                field("amount", Some(1), Some(450.0)),
                field("cause", Some(2), Some(750.0)),
                field("signed", Some(2), Some(600.0)),
                field("reference", None, None),
                field("title", Some(1), Some(780.0)),
            ],
        );
        let names = |s: usize| -> Vec<&str> {
            tree.sections[s]
                .fields
                .iter()
                .map(|f| f.name.as_str())
                .collect()
        };
        assert_eq!(names(0), ["reference", "title"]);
        assert_eq!(names(1), ["name"]);
        // Above the page's first heading, a field still belongs to the
        // section the last page ended in.
        assert_eq!(names(2), ["amount", "cause"]);
        assert_eq!(names(3), ["signed"]);
    }
}
