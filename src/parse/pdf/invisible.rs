//! Text a page does not draw: runs shown with text render mode 3 or 7
//! (neither filled nor stroked, ISO 32000-1 §9.3.6), and the images they
//! may lie over.
//!
//! Invisible text has two uses. An OCR program puts the words it read
//! under the scanned image of a page, so the page can be searched: that
//! text is the page's only text and is kept. Anything else invisible is
//! hidden from the reader (and a way to slip instructions past one into a
//! retrieval system), so the parser leaves it out. The glyph extractor
//! does not say how a glyph was drawn, so the page's content stream is
//! walked here: each text-showing operator's starting point is worked out
//! from the transformation and text matrices, with whether it is drawn,
//! and glyphs are matched to the run that starts last before them on
//! their baseline. Only pages whose content sets an invisible render mode
//! are walked, so ordinary pages cost one byte scan.

use pdf_oxide::content::{Operator, parse_content_stream};
use pdf_oxide::object::Object;

/// An affine transformation `[a b c d e f]`, as PDF writes them.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Matrix([f32; 6]);

impl Matrix {
    const IDENTITY: Matrix = Matrix([1.0, 0.0, 0.0, 1.0, 0.0, 0.0]);

    /// `self` applied first, then `then`.
    fn then(self, then: Matrix) -> Matrix {
        let [a, b, c, d, e, f] = self.0;
        let [a2, b2, c2, d2, e2, f2] = then.0;
        Matrix([
            a * a2 + b * c2,
            a * b2 + b * d2,
            c * a2 + d * c2,
            c * b2 + d * d2,
            e * a2 + f * c2 + e2,
            e * b2 + f * d2 + f2,
        ])
    }

    fn translation(x: f32, y: f32) -> Matrix {
        Matrix([1.0, 0.0, 0.0, 1.0, x, y])
    }

    fn apply(self, x: f32, y: f32) -> (f32, f32) {
        let [a, b, c, d, e, f] = self.0;
        (a * x + c * y + e, b * x + d * y + f)
    }
}

/// Where a text-showing operator starts, and whether it is drawn.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Run {
    x: f32,
    y: f32,
    invisible: bool,
}

/// What a page's content says about invisible text.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct PageInk {
    runs: Vec<Run>,
    /// Boxes `[x0, y0, x1, y1]` of the images drawn on the page.
    images: Vec<[f32; 4]>,
}

/// How a glyph is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ink {
    Drawn,
    /// Invisible, over an image: an OCR layer.
    OcrLayer,
    /// Invisible, over nothing: hidden text.
    Hidden,
}

impl PageInk {
    /// Reads the page's content, or `None` when it draws all its text (the
    /// common case) or cannot be read (its glyphs then count as drawn).
    pub(super) fn read(document: &pdf_oxide::PdfDocument, page: usize) -> Option<PageInk> {
        let content = document.get_page_content_data(page).ok()?;
        if !sets_invisible_mode(&content) {
            return None;
        }
        let operators = parse_content_stream(&content).ok()?;
        let images = image_names(document, page);
        Some(walk(&operators, &|name: &str| {
            images.iter().any(|n| n == name)
        }))
    }

    /// How the glyph whose origin is at `(x, y)`, in a font of `size`, is
    /// drawn.
    pub(super) fn ink(&self, x: f32, y: f32, size: f32) -> Ink {
        let tolerance = (0.3 * size).max(1.0);
        let run = self
            .runs
            .iter()
            .filter(|r| (r.y - y).abs() <= tolerance && r.x <= x + tolerance)
            .max_by(|a, b| a.x.total_cmp(&b.x));
        match run {
            Some(r) if r.invisible => {
                let over_image = self.images.iter().any(|&[x0, y0, x1, y1]| {
                    (x0 - 1.0..=x1 + 1.0).contains(&x) && (y0 - 1.0..=y1 + 1.0).contains(&y)
                });
                if over_image {
                    Ink::OcrLayer
                } else {
                    Ink::Hidden
                }
            }
            _ => Ink::Drawn,
        }
    }
}

/// Whether a content stream sets render mode 3 or 7 anywhere (`3 Tr`,
/// `7 Tr`, with any white space between).
fn sets_invisible_mode(content: &[u8]) -> bool {
    content.windows(2).enumerate().any(|(i, w)| {
        if w != b"Tr" {
            return false;
        }
        let after_ok = content
            .get(i + 2)
            .is_none_or(|b| b.is_ascii_whitespace() || b"/[<(%".contains(b));
        let operand = content[..i].trim_ascii_end();
        let digit = operand.last();
        let before_digit = operand.len().checked_sub(2).map(|j| operand[j]);
        after_ok
            && matches!(digit, Some(b'3' | b'7'))
            && before_digit.is_none_or(|b| b.is_ascii_whitespace())
            && operand.len() < i
    })
}

/// The names under which the page's resources hold image XObjects.
fn image_names(document: &pdf_oxide::PdfDocument, page: usize) -> Vec<String> {
    let resolve = |object: &Object| -> Option<Object> {
        match object.as_reference() {
            Some(reference) => document.load_object(reference).ok(),
            None => Some(object.clone()),
        }
    };
    let Some(page) = document.get_page(page).ok() else {
        return Vec::new();
    };
    let xobjects = page
        .as_dict()
        .and_then(|d| d.get("Resources"))
        .and_then(resolve)
        .and_then(|r| r.as_dict()?.get("XObject").and_then(resolve));
    let Some(Object::Dictionary(xobjects)) = xobjects else {
        return Vec::new();
    };
    xobjects
        .iter()
        .filter(|(_, object)| {
            let dict = match resolve(object) {
                Some(Object::Stream { dict, .. }) | Some(Object::Dictionary(dict)) => dict,
                _ => return false,
            };
            dict.get("Subtype").and_then(Object::as_name) == Some("Image")
        })
        .map(|(name, _)| name.clone())
        .collect()
}

/// Text state the walk keeps.
#[derive(Clone, Copy)]
struct State {
    ctm: Matrix,
    mode: u8,
    leading: f32,
}

/// Follows the content's transformations and text positioning, recording
/// where each text-showing operator starts and each image is drawn.
fn walk(operators: &[Operator], is_image: &dyn Fn(&str) -> bool) -> PageInk {
    let mut ink = PageInk::default();
    let mut state = State {
        ctm: Matrix::IDENTITY,
        mode: 0,
        leading: 0.0,
    };
    let mut saved: Vec<State> = Vec::new();
    // Text matrix and text line matrix; `positioned` is false once text has
    // been shown from the current position (where the next run starts then
    // depends on glyph widths, which are not known here).
    let mut text = Matrix::IDENTITY;
    let mut line = Matrix::IDENTITY;
    let mut positioned = true;
    let next_line = |line: &mut Matrix, text: &mut Matrix, tx: f32, ty: f32| {
        *line = Matrix::translation(tx, ty).then(*line);
        *text = *line;
    };
    for operator in operators {
        let shows = match operator {
            Operator::SaveState => {
                saved.push(state);
                false
            }
            Operator::RestoreState => {
                if let Some(s) = saved.pop() {
                    state = s;
                }
                false
            }
            Operator::Cm { a, b, c, d, e, f } => {
                state.ctm = Matrix([*a, *b, *c, *d, *e, *f]).then(state.ctm);
                false
            }
            Operator::Tr { render } => {
                state.mode = *render;
                false
            }
            Operator::TL { leading } => {
                state.leading = *leading;
                false
            }
            Operator::BeginText => {
                text = Matrix::IDENTITY;
                line = Matrix::IDENTITY;
                positioned = true;
                false
            }
            Operator::Tm { a, b, c, d, e, f } => {
                line = Matrix([*a, *b, *c, *d, *e, *f]);
                text = line;
                positioned = true;
                false
            }
            Operator::Td { tx, ty } => {
                next_line(&mut line, &mut text, *tx, *ty);
                positioned = true;
                false
            }
            Operator::TD { tx, ty } => {
                state.leading = -*ty;
                next_line(&mut line, &mut text, *tx, *ty);
                positioned = true;
                false
            }
            Operator::TStar => {
                next_line(&mut line, &mut text, 0.0, -state.leading);
                positioned = true;
                false
            }
            Operator::Quote { .. } | Operator::DoubleQuote { .. } => {
                next_line(&mut line, &mut text, 0.0, -state.leading);
                positioned = true;
                true
            }
            Operator::Tj { .. } | Operator::TJ { .. } => true,
            Operator::Do { name } if is_image(name) => {
                ink.images.push(unit_square(state.ctm));
                false
            }
            Operator::InlineImage { .. } => {
                ink.images.push(unit_square(state.ctm));
                false
            }
            _ => false,
        };
        if shows && positioned {
            let (x, y) = text.then(state.ctm).apply(0.0, 0.0);
            ink.runs.push(Run {
                x,
                y,
                invisible: matches!(state.mode, 3 | 7),
            });
            positioned = false;
        }
    }
    ink
}

/// The box an image drawn under `ctm` covers (images fill the unit
/// square of their space).
fn unit_square(ctm: Matrix) -> [f32; 4] {
    let corners = [(0.0, 0.0), (1.0, 0.0), (0.0, 1.0), (1.0, 1.0)].map(|(x, y)| ctm.apply(x, y));
    let xs = corners.map(|c| c.0);
    let ys = corners.map(|c| c.1);
    [
        xs.into_iter().fold(f32::INFINITY, f32::min),
        ys.into_iter().fold(f32::INFINITY, f32::min),
        xs.into_iter().fold(f32::NEG_INFINITY, f32::max),
        ys.into_iter().fold(f32::NEG_INFINITY, f32::max),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ink_of(content: &[u8], images: &[&str]) -> PageInk {
        let operators = parse_content_stream(content).expect("content parses");
        walk(&operators, &|name: &str| images.contains(&name))
    }

    #[test]
    fn only_streams_setting_an_invisible_mode_are_walked() {
        assert!(sets_invisible_mode(b"BT 3 Tr (x) Tj ET"));
        assert!(sets_invisible_mode(b"BT\n7\nTr\n(x) Tj ET"));
        assert!(!sets_invisible_mode(b"BT 0 Tr (x) Tj ET"));
        assert!(!sets_invisible_mode(b"BT 13 Tr (x) Tj ET"));
        assert!(!sets_invisible_mode(b"BT (3 Tr) Tj ET Trap"));
        assert!(!sets_invisible_mode(b"BT (x) Tj ET"));
    }

    #[test]
    fn hidden_text_beside_drawn_text() {
        let ink = ink_of(
            b"BT /F1 18 Tf 1 0 0 1 72 700 Tm (Visible) Tj ET \
              BT /F1 18 Tf 3 Tr 1 0 0 1 72 300 Tm (Invisible) Tj ET",
            &[],
        );
        assert_eq!(ink.ink(80.0, 700.0, 18.0), Ink::Drawn);
        assert_eq!(ink.ink(150.0, 300.0, 18.0), Ink::Hidden);
        // A glyph left of every run on its baseline is taken as drawn.
        assert_eq!(ink.ink(10.0, 300.0, 18.0), Ink::Drawn);
    }

    #[test]
    fn ocr_layers_lie_over_the_scanned_image() {
        // The scan fills the page; words are placed with Td moves under a
        // scaled matrix, as OCR programs write them.
        let ink = ink_of(
            b"q 612 0 0 792 0 0 cm /Im0 Do Q \
              BT 3 Tr /F1 10 Tf 1 0 0 1 72 700 Tm (Scanned) Tj 60 0 Td (words) Tj \
              0 -14 Td (next) Tj ET \
              BT 0 Tr 2 0 0 2 10 10 Tm (Bates 001) Tj ET",
            &["Im0"],
        );
        assert_eq!(ink.images, vec![[0.0, 0.0, 612.0, 792.0]]);
        assert_eq!(ink.ink(72.0, 700.0, 10.0), Ink::OcrLayer);
        assert_eq!(ink.ink(140.0, 700.0, 10.0), Ink::OcrLayer);
        assert_eq!(ink.ink(132.0, 686.0, 10.0), Ink::OcrLayer);
        assert_eq!(ink.ink(12.0, 10.0, 20.0), Ink::Drawn);
    }

    #[test]
    fn state_is_restored_and_matrices_compose() {
        let ink = ink_of(
            b"q 3 Tr Q q BT 2 0 0 2 100 100 cm (a) Tj ET Q \
              q 1 0 0 1 50 0 cm BT 7 Tr 10 20 Td (b) Tj ET Q",
            &[],
        );
        assert_eq!(
            ink.runs,
            vec![
                Run {
                    x: 100.0,
                    y: 100.0,
                    invisible: false
                },
                Run {
                    x: 60.0,
                    y: 20.0,
                    invisible: true
                },
            ]
        );
    }
}
