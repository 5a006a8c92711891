//! Office Math (`m:oMath`) → a linear LaTeX form.
//!
//! LaTeX is the one linear notation that both readers and retrieval models
//! know for fractions, scripts, roots and big operators, so an equation is
//! kept in the text where it stands (`$A = \pi r^{2}$`) instead of being
//! dropped or flattened into an unreadable run of symbols. Converted
//! streaming: each OMML structure is a frame collecting its arguments
//! (`m:e`, `m:num`, `m:sub`, …) and renders when it closes.

use super::xml::{Element, Node, Ns, XmlReader};
use crate::parse::ParseFailure;

/// An argument slot of an OMML structure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Arg {
    Base,
    Numerator,
    Denominator,
    Sub,
    Sup,
    Degree,
    Limit,
    FunctionName,
    /// A rendered child structure of a structure (a matrix row).
    Item,
}

impl Arg {
    fn from_local(local: &str) -> Option<Arg> {
        Some(match local {
            "e" => Arg::Base,
            "num" => Arg::Numerator,
            "den" => Arg::Denominator,
            "sub" => Arg::Sub,
            "sup" => Arg::Sup,
            "deg" => Arg::Degree,
            "lim" => Arg::Limit,
            "fName" => Arg::FunctionName,
            _ => return None,
        })
    }
}

/// The OMML structures rendered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Structure {
    Accent,
    Bar,
    Box,
    Delimiter,
    EquationArray,
    Fraction,
    Function,
    GroupChar,
    LowerLimit,
    UpperLimit,
    Matrix,
    MatrixRow,
    Nary,
    Phantom,
    Radical,
    PreScript,
    Sub,
    Sup,
    SubSup,
}

impl Structure {
    fn from_local(local: &str) -> Option<Structure> {
        Some(match local {
            "acc" => Structure::Accent,
            "bar" => Structure::Bar,
            "box" | "borderBox" => Structure::Box,
            "d" => Structure::Delimiter,
            "eqArr" => Structure::EquationArray,
            "f" => Structure::Fraction,
            "func" => Structure::Function,
            "groupChr" => Structure::GroupChar,
            "limLow" => Structure::LowerLimit,
            "limUpp" => Structure::UpperLimit,
            "m" => Structure::Matrix,
            "mr" => Structure::MatrixRow,
            "nary" => Structure::Nary,
            "phant" => Structure::Phantom,
            "rad" => Structure::Radical,
            "sPre" => Structure::PreScript,
            "sSub" => Structure::Sub,
            "sSup" => Structure::Sup,
            "sSubSup" => Structure::SubSup,
            _ => return None,
        })
    }
}

/// Properties of a structure (`m:chr`, `m:begChr`, `m:type`, …).
#[derive(Debug, Default)]
struct Props {
    chr: Option<String>,
    beg_chr: Option<String>,
    end_chr: Option<String>,
    sep_chr: Option<String>,
    kind: Option<String>,
    pos: Option<String>,
    deg_hide: bool,
    sub_hide: bool,
    sup_hide: bool,
}

#[derive(Debug)]
enum FrameKind {
    Root,
    Arg(Arg),
    Structure(Structure),
    /// An element without meaning of its own (`m:r`, `m:oMathPara`…).
    Transparent,
}

#[derive(Debug)]
struct Frame {
    kind: FrameKind,
    text: String,
    args: Vec<(Arg, String)>,
    props: Props,
}

impl Frame {
    fn new(kind: FrameKind) -> Self {
        Self {
            kind,
            text: String::new(),
            args: Vec::new(),
            props: Props::default(),
        }
    }

    fn arg(&self, arg: Arg) -> &str {
        self.args
            .iter()
            .find(|(a, _)| *a == arg)
            .map(|(_, s)| s.trim())
            .unwrap_or("")
    }

    fn all(&self, arg: Arg) -> impl Iterator<Item = &str> {
        self.args
            .iter()
            .filter(move |(a, _)| *a == arg)
            .map(|(_, s)| s.trim())
    }
}

/// Reads the rest of an `m:oMath` element (just opened) and returns it as
/// LaTeX, without `$` delimiters.
pub(super) fn read_math(reader: &mut XmlReader<'_>) -> Result<String, ParseFailure> {
    let mut stack = vec![Frame::new(FrameKind::Root)];
    let mut in_text = false;
    loop {
        match reader.next()? {
            Node::Open(element) => {
                if element.ns != Ns::Math {
                    // Word run properties and the like inside math.
                    reader.skip()?;
                    continue;
                }
                let local = element.local();
                if local.ends_with("Pr") {
                    let props = read_props(reader)?;
                    if let Some(frame) = stack.last_mut() {
                        merge_props(&mut frame.props, props);
                    }
                } else if local == "t" {
                    in_text = true;
                    stack.push(Frame::new(FrameKind::Transparent));
                } else if let Some(arg) = Arg::from_local(local) {
                    stack.push(Frame::new(FrameKind::Arg(arg)));
                } else if let Some(structure) = Structure::from_local(local) {
                    stack.push(Frame::new(FrameKind::Structure(structure)));
                } else {
                    stack.push(Frame::new(FrameKind::Transparent));
                }
            }
            Node::Leaf(element) => {
                if let Some(frame) = stack.last_mut()
                    && element.ns == Ns::Math
                    && let Some(structure) = Structure::from_local(element.local())
                {
                    // An empty structure still renders (an empty fraction…).
                    let empty = Frame::new(FrameKind::Structure(structure));
                    push_rendered(frame, render(structure, &empty));
                }
            }
            Node::Text(text) => {
                if in_text && let Some(frame) = stack.last_mut() {
                    push_math_text(&mut frame.text, &text);
                }
            }
            Node::Close(..) => {
                let Some(frame) = stack.pop() else {
                    break;
                };
                let Some(parent) = stack.last_mut() else {
                    // The root closed: the oMath element ended.
                    return Ok(frame.text.trim().to_string());
                };
                match frame.kind {
                    FrameKind::Root => {}
                    FrameKind::Transparent => {
                        in_text = false;
                        parent.text.push_str(&frame.text);
                    }
                    FrameKind::Arg(arg) => parent.args.push((arg, frame.text)),
                    FrameKind::Structure(structure) => {
                        let rendered = render(structure, &frame);
                        push_rendered(parent, rendered);
                    }
                }
            }
            Node::Eof => break,
        }
    }
    Err(reader.error("the part ends inside an equation"))
}

/// A rendered structure goes into its parent's text, or, when the parent
/// is itself a structure (a matrix holding rows), into its items.
fn push_rendered(parent: &mut Frame, rendered: String) {
    if matches!(parent.kind, FrameKind::Structure(_)) {
        parent.args.push((Arg::Item, rendered));
    } else {
        parent.text.push_str(&rendered);
    }
}

/// Reads a `…Pr` element (just opened): the `m:val` of its children.
fn read_props(reader: &mut XmlReader<'_>) -> Result<Props, ParseFailure> {
    let mut props = Props::default();
    let mut record = |element: &Element<'_>| {
        if element.ns != Ns::Math {
            return;
        }
        let val = element.attr("val");
        match element.local() {
            "chr" => props.chr = val,
            "begChr" => props.beg_chr = val,
            "endChr" => props.end_chr = val,
            "sepChr" => props.sep_chr = val,
            "type" => props.kind = val,
            "pos" => props.pos = val,
            "degHide" => props.deg_hide = element.is_on(),
            "subHide" => props.sub_hide = element.is_on(),
            "supHide" => props.sup_hide = element.is_on(),
            _ => {}
        }
    };
    reader.visit_subtree(|visit| {
        if let super::xml::Visit::Element(path, element) = visit
            && path.is_empty()
        {
            record(element);
        }
    })?;
    Ok(props)
}

fn merge_props(into: &mut Props, from: Props) {
    into.chr = from.chr.or(into.chr.take());
    into.beg_chr = from.beg_chr.or(into.beg_chr.take());
    into.end_chr = from.end_chr.or(into.end_chr.take());
    into.sep_chr = from.sep_chr.or(into.sep_chr.take());
    into.kind = from.kind.or(into.kind.take());
    into.pos = from.pos.or(into.pos.take());
    into.deg_hide |= from.deg_hide;
    into.sub_hide |= from.sub_hide;
    into.sup_hide |= from.sup_hide;
}

/// Bases that need braces before a script to stay unambiguous.
fn grouped_base(base: &str) -> String {
    let base = base.trim_end();
    if base.contains("\\frac") || base.contains("\\sqrt") {
        format!("{{{base}}}")
    } else {
        base.to_string()
    }
}

/// Functions LaTeX has a command for.
const FUNCTIONS: [&str; 31] = [
    "sin", "cos", "tan", "cot", "sec", "csc", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
    "coth", "log", "ln", "lg", "exp", "max", "min", "lim", "sup", "inf", "det", "gcd", "deg",
    "dim", "hom", "ker", "arg", "Pr", "mod",
];

/// "sin" → "\sin", "argmax" → "\operatorname{argmax}"; text that already
/// is LaTeX stays as it is.
fn function_name(name: &str) -> String {
    let name = name.trim();
    if name.starts_with('\\') || name.is_empty() {
        name.to_string()
    } else if FUNCTIONS.contains(&name) {
        format!("\\{name}")
    } else if name.chars().all(char::is_alphabetic) {
        format!("\\operatorname{{{name}}}")
    } else {
        name.to_string()
    }
}

fn render(structure: Structure, frame: &Frame) -> String {
    let props = &frame.props;
    let base = frame.arg(Arg::Base);
    match structure {
        Structure::Accent => {
            let command = match props.chr.as_deref().unwrap_or("\u{302}") {
                "\u{300}" => "grave",
                "\u{301}" => "acute",
                "\u{302}" | "^" => "hat",
                "\u{303}" | "~" => "tilde",
                "\u{304}" | "\u{305}" | "¯" => "bar",
                "\u{306}" => "breve",
                "\u{307}" => "dot",
                "\u{308}" => "ddot",
                "\u{30C}" => "check",
                "\u{20D6}" => "overleftarrow",
                "\u{20D7}" | "→" => "vec",
                "\u{20E1}" => "overleftrightarrow",
                _ => return base.to_string(),
            };
            format!("\\{command}{{{base}}}")
        }
        Structure::Bar => match props.pos.as_deref() {
            Some("top") => format!("\\overline{{{base}}}"),
            _ => format!("\\underline{{{base}}}"),
        },
        Structure::Box | Structure::Phantom => base.to_string(),
        Structure::Delimiter => {
            let open = delimiter(props.beg_chr.as_deref().unwrap_or("("));
            let close = delimiter(props.end_chr.as_deref().unwrap_or(")"));
            let separator = props.sep_chr.as_deref().unwrap_or("|");
            let content: Vec<&str> = frame.all(Arg::Base).collect();
            format!("\\left{open}{}\\right{close}", content.join(separator))
        }
        Structure::EquationArray => frame.all(Arg::Base).collect::<Vec<_>>().join(" \\\\ "),
        Structure::Fraction => {
            let (num, den) = (frame.arg(Arg::Numerator), frame.arg(Arg::Denominator));
            match props.kind.as_deref() {
                Some("noBar") => format!("\\genfrac{{}}{{}}{{0pt}}{{}}{{{num}}}{{{den}}}"),
                Some("lin") => format!("{num}/{den}"),
                Some("skw") => format!("^{{{num}}}/_{{{den}}}"),
                _ => format!("\\frac{{{num}}}{{{den}}}"),
            }
        }
        Structure::Function => {
            format!("{}{{{base}}}", function_name(frame.arg(Arg::FunctionName)))
        }
        Structure::GroupChar => {
            let top = props.pos.as_deref() == Some("top");
            match props.chr.as_deref() {
                None | Some("\u{23DF}") => format!("\\underbrace{{{base}}}"),
                Some("\u{23DE}") => format!("\\overbrace{{{base}}}"),
                Some("\u{23DC}") => format!("\\overparen{{{base}}}"),
                Some("\u{23DD}") => format!("\\underparen{{{base}}}"),
                Some(chr) if top => format!("\\overset{{{chr}}}{{{base}}}"),
                Some(chr) => format!("\\underset{{{chr}}}{{{base}}}"),
            }
        }
        Structure::LowerLimit => {
            let limit = frame.arg(Arg::Limit).replace("\\rightarrow ", "\\to ");
            let limit = limit.trim();
            let name = base.trim_start_matches('\\');
            if FUNCTIONS.contains(&name) || base.starts_with("\\operatorname") {
                format!("{}_{{{limit}}}", function_name(base))
            } else if matches!(name, "argmax" | "argmin") {
                format!("\\operatorname{{{name}}}_{{{limit}}}")
            } else if base.starts_with("\\underbrace") {
                format!("{base}_{{{limit}}}")
            } else {
                format!("\\underset{{{limit}}}{{{base}}}")
            }
        }
        Structure::UpperLimit => format!("\\overset{{{}}}{{{base}}}", frame.arg(Arg::Limit)),
        Structure::Matrix => format!(
            "\\begin{{matrix}}{}\\end{{matrix}}",
            frame.all(Arg::Item).collect::<Vec<_>>().join(" \\\\ ")
        ),
        Structure::MatrixRow => frame.all(Arg::Base).collect::<Vec<_>>().join(" & "),
        Structure::Nary => {
            let operator = match props.chr.as_deref() {
                None => "\\int",
                Some(chr) => big_operator(chr).unwrap_or(chr),
            };
            let mut out = operator.to_string();
            let sub = frame.arg(Arg::Sub);
            let sup = frame.arg(Arg::Sup);
            if !props.sub_hide && !sub.is_empty() {
                out.push_str(&format!("_{{{sub}}}"));
            }
            if !props.sup_hide && !sup.is_empty() {
                out.push_str(&format!("^{{{sup}}}"));
            }
            if out.ends_with(|c: char| c.is_ascii_alphabetic())
                && base.starts_with(|c: char| c.is_ascii_alphanumeric())
            {
                out.push(' ');
            }
            out.push_str(base);
            out
        }
        Structure::Radical => {
            let degree = frame.arg(Arg::Degree);
            if props.deg_hide || degree.is_empty() {
                format!("\\sqrt{{{base}}}")
            } else {
                format!("\\sqrt[{degree}]{{{base}}}")
            }
        }
        Structure::PreScript => {
            let mut out = "{}".to_string();
            for (marker, script) in [('_', frame.arg(Arg::Sub)), ('^', frame.arg(Arg::Sup))] {
                if !script.is_empty() {
                    out.push_str(&format!("{marker}{{{script}}}"));
                }
            }
            out.push_str(base);
            out
        }
        Structure::Sub => format!("{}_{{{}}}", grouped_base(base), frame.arg(Arg::Sub)),
        Structure::Sup => format!("{}^{{{}}}", grouped_base(base), frame.arg(Arg::Sup)),
        Structure::SubSup => format!(
            "{}_{{{}}}^{{{}}}",
            grouped_base(base),
            frame.arg(Arg::Sub),
            frame.arg(Arg::Sup)
        ),
    }
}

fn delimiter(chr: &str) -> &str {
    match chr {
        "" => ".",
        "{" => "\\{",
        "}" => "\\}",
        "⟨" | "〈" => "\\langle ",
        "⟩" | "〉" => "\\rangle ",
        "⌊" => "\\lfloor ",
        "⌋" => "\\rfloor ",
        "⌈" => "\\lceil ",
        "⌉" => "\\rceil ",
        "‖" => "\\|",
        other => other,
    }
}

fn big_operator(chr: &str) -> Option<&'static str> {
    Some(match chr {
        "∑" => "\\sum",
        "∏" => "\\prod",
        "∐" => "\\coprod",
        "∫" => "\\int",
        "∬" => "\\iint",
        "∭" => "\\iiint",
        "∮" => "\\oint",
        "∯" => "\\oiint",
        "∰" => "\\oiiint",
        "⋀" => "\\bigwedge",
        "⋁" => "\\bigvee",
        "⋂" => "\\bigcap",
        "⋃" => "\\bigcup",
        "⨀" => "\\bigodot",
        "⨁" => "\\bigoplus",
        "⨂" => "\\bigotimes",
        _ => return None,
    })
}

/// Appends the text of an `m:t`, with symbols as LaTeX commands and
/// mathematical alphanumerics (𝑥, 𝐀) as plain letters.
fn push_math_text(out: &mut String, text: &str) {
    for c in text.chars() {
        let c = plain_letter(c);
        match symbol(c) {
            Some(command) => {
                out.push_str(command);
                out.push(' ');
            }
            None => match c {
                '{' | '}' | '#' | '%' | '&' | '$' | '_' => {
                    out.push('\\');
                    out.push(c);
                }
                '\u{2212}' | '\u{2013}' | '\u{2014}' => out.push('-'),
                c => out.push(c),
            },
        }
    }
}

/// Mathematical alphanumeric symbols (U+1D400–U+1D7FF) and the letter-like
/// ones they borrow (ℎ) mapped to the letter they style.
fn plain_letter(c: char) -> char {
    let code = c as u32;
    match code {
        0x1D400..=0x1D6A3 => {
            let index = (code - 0x1D400) % 52;
            let base = if index < 26 { b'A' } else { b'a' };
            char::from(base + (index % 26) as u8)
        }
        0x1D6A8..=0x1D7C9 => {
            // Greek: 58 per style, capitals Α–Ω (with ϴ), ∇, small α–ω, then
            // ∂ ϵ ϑ ϰ ϕ ϱ ϖ.
            const TAIL: [char; 7] = ['∂', 'ϵ', 'ϑ', 'ϰ', 'ϕ', 'ϱ', 'ϖ'];
            let index = (code - 0x1D6A8) % 58;
            match index {
                0..=24 => char::from_u32(0x391 + index).unwrap_or(c),
                25 => '∇',
                26..=50 => char::from_u32(0x3B1 + index - 26).unwrap_or(c),
                _ => TAIL.get((index - 51) as usize).copied().unwrap_or(c),
            }
        }
        0x1D7CE..=0x1D7FF => char::from(b'0' + ((code - 0x1D7CE) % 10) as u8),
        0x210E => 'h',
        _ => c,
    }
}

fn symbol(c: char) -> Option<&'static str> {
    Some(match c {
        'α' => "\\alpha",
        'β' => "\\beta",
        'γ' => "\\gamma",
        'δ' => "\\delta",
        'ε' | 'ϵ' => "\\epsilon",
        'ζ' => "\\zeta",
        'η' => "\\eta",
        'θ' => "\\theta",
        'ϑ' => "\\vartheta",
        'ι' => "\\iota",
        'κ' | 'ϰ' => "\\kappa",
        'λ' => "\\lambda",
        'μ' => "\\mu",
        'ν' => "\\nu",
        'ξ' => "\\xi",
        'π' => "\\pi",
        'ϖ' => "\\varpi",
        'ρ' | 'ϱ' => "\\rho",
        'σ' => "\\sigma",
        'ς' => "\\varsigma",
        'τ' => "\\tau",
        'υ' => "\\upsilon",
        'φ' => "\\varphi",
        'ϕ' => "\\phi",
        'χ' => "\\chi",
        'ψ' => "\\psi",
        'ω' => "\\omega",
        'Γ' => "\\Gamma",
        'Δ' => "\\Delta",
        'Θ' => "\\Theta",
        'Λ' => "\\Lambda",
        'Ξ' => "\\Xi",
        'Π' => "\\Pi",
        'Σ' => "\\Sigma",
        'Υ' => "\\Upsilon",
        'Φ' => "\\Phi",
        'Ψ' => "\\Psi",
        'Ω' => "\\Omega",
        '∞' => "\\infty",
        '∂' => "\\partial",
        '∇' => "\\nabla",
        '±' => "\\pm",
        '∓' => "\\mp",
        '×' => "\\times",
        '·' | '⋅' => "\\cdot",
        '÷' => "\\div",
        '≤' => "\\leq",
        '≥' => "\\geq",
        '≠' => "\\neq",
        '≈' => "\\approx",
        '≡' => "\\equiv",
        '∼' => "\\sim",
        '∝' => "\\propto",
        '∈' => "\\in",
        '∉' => "\\notin",
        '∋' => "\\ni",
        '⊂' => "\\subset",
        '⊃' => "\\supset",
        '⊆' => "\\subseteq",
        '⊇' => "\\supseteq",
        '∪' => "\\cup",
        '∩' => "\\cap",
        '∅' => "\\emptyset",
        '∀' => "\\forall",
        '∃' => "\\exists",
        '¬' => "\\neg",
        '∧' => "\\wedge",
        '∨' => "\\vee",
        '→' => "\\rightarrow",
        '←' => "\\leftarrow",
        '↔' => "\\leftrightarrow",
        '⇒' => "\\Rightarrow",
        '⇐' => "\\Leftarrow",
        '⇔' => "\\Leftrightarrow",
        '…' => "\\ldots",
        '⋯' => "\\cdots",
        '⋮' => "\\vdots",
        '⋱' => "\\ddots",
        '°' => "^{\\circ}",
        '\\' => "\\backslash",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn latex(body: &str) -> String {
        let xml = format!(
            r#"<m:oMath xmlns:m="http://schemas.openxmlformats.org/officeDocument/2006/math" xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">{body}</m:oMath>"#
        );
        let mut reader = XmlReader::new(&xml, "word/document.xml", 64);
        let Ok(Node::Open(_)) = reader.next() else {
            panic!("oMath expected");
        };
        read_math(&mut reader).unwrap()
    }

    fn r(text: &str) -> String {
        format!("<m:r><w:rPr><w:rFonts w:ascii=\"Cambria Math\"/></w:rPr><m:t>{text}</m:t></m:r>")
    }

    #[test]
    fn scripts_fractions_and_symbols() {
        let area = format!(
            "{}<m:sSup><m:e>{}</m:e><m:sup>{}</m:sup></m:sSup>",
            r("A=π"),
            r("r"),
            r("2")
        );
        assert_eq!(latex(&area), "A=\\pi r^{2}");
        let fraction = format!(
            "<m:sSup><m:e><m:f><m:num>{}</m:num><m:den>{}</m:den></m:f></m:e><m:sup>{}</m:sup></m:sSup>",
            r("(x−c)"),
            r("v"),
            r("2")
        );
        assert_eq!(latex(&fraction), "{\\frac{(x-c)}{v}}^{2}");
        assert_eq!(latex(&r("𝑁𝑠")), "Ns");
    }

    #[test]
    fn delimiters_operators_and_functions() {
        let sum = format!(
            "<m:nary><m:naryPr><m:chr m:val=\"∑\"/></m:naryPr><m:sub>{}</m:sub><m:sup>{}</m:sup><m:e>{}</m:e></m:nary>",
            r("k=0"),
            r("n"),
            r("x")
        );
        assert_eq!(latex(&sum), "\\sum_{k=0}^{n}x");
        let integral = format!(
            "<m:nary><m:naryPr><m:subHide m:val=\"1\"/><m:supHide m:val=\"1\"/></m:naryPr><m:sub/><m:sup/><m:e>{}</m:e></m:nary>",
            r("x")
        );
        assert_eq!(latex(&integral), "\\int x");
        let log = format!(
            "<m:func><m:fName>{}</m:fName><m:e><m:d><m:e>{}</m:e></m:d></m:e></m:func>",
            r("log"),
            r("x")
        );
        assert_eq!(latex(&log), "\\log{\\left(x\\right)}");
        let set = format!(
            "<m:d><m:dPr><m:begChr m:val=\"{{\"/><m:endChr m:val=\"\"/></m:dPr><m:e>{}</m:e></m:d>",
            r("a")
        );
        assert_eq!(latex(&set), "\\left\\{a\\right.");
        let root = format!(
            "<m:rad><m:radPr><m:degHide m:val=\"1\"/></m:radPr><m:deg/><m:e>{}</m:e></m:rad>",
            r("2")
        );
        assert_eq!(latex(&root), "\\sqrt{2}");
        let limit = format!(
            "<m:func><m:fName><m:limLow><m:e>{}</m:e><m:lim>{}</m:lim></m:limLow></m:fName><m:e>{}</m:e></m:func>",
            r("lim"),
            r("n→∞"),
            r("a")
        );
        assert_eq!(latex(&limit), "\\lim_{n\\to \\infty}{a}");
    }

    #[test]
    fn matrices_join_rows_and_cells() {
        let m = format!(
            "<m:m><m:mr><m:e>{}</m:e><m:e>{}</m:e></m:mr><m:mr><m:e>{}</m:e><m:e>{}</m:e></m:mr></m:m>",
            r("a"),
            r("b"),
            r("c"),
            r("d")
        );
        assert_eq!(latex(&m), "\\begin{matrix}a & b \\\\ c & d\\end{matrix}");
    }
}
