//! The composite score's signals, named once.
//!
//! Stage 3 scores a sentence as Σ weight × signal. Each signal is a
//! [`Signal`], and [`Signal::ABOUT`] gives its name in a route's
//! `scoring.weights`, its name in a result's `signals`, its default
//! weight and what it measures. Weights and per-result signals are both
//! [`PerSignal`] arrays indexed by it, and their serialized forms, the
//! CRD schema and the API schema are built from that table, so a new
//! signal is one row here and the code that measures it.

use std::borrow::Cow;
use std::fmt;
use std::ops::{Index, IndexMut};

use schemars::JsonSchema;
use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One signal of the composite score, in [0, 1] for each sentence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Signal {
    Fusion,
    Dense,
    Lexical,
    Structure,
    Context,
    Heading,
    Paragraph,
    Definition,
    Provenance,
    Entity,
    AnswerType,
    Document,
    Rerank,
}

/// What a signal is called and measures.
#[derive(Debug)]
pub struct About {
    pub signal: Signal,
    /// Its key in a route's `scoring.weights` (camelCase, as manifests
    /// write fields).
    pub weight_key: &'static str,
    /// Its key in a result's `signals` (snake_case, as results print).
    pub result_key: &'static str,
    /// Its weight when a route does not set one.
    pub default_weight: f32,
    /// What it measures, for the CRD schema.
    pub description: &'static str,
}

impl Signal {
    /// How many signals there are.
    pub const COUNT: usize = 13;

    /// Every signal, in [`Signal`] order, which is the order a result
    /// lists them in.
    pub const ABOUT: [About; Self::COUNT] = [
        About {
            signal: Signal::Fusion,
            weight_key: "fusion",
            result_key: "fusion",
            default_weight: 0.2,
            description: "Fused rank of the sentence (RRF, scaled to [0, 1]). Default 0.2.",
        },
        About {
            signal: Signal::Dense,
            weight_key: "dense",
            result_key: "dense",
            default_weight: 1.0,
            description: "Cosine similarity to the query. Default 1.0.",
        },
        About {
            signal: Signal::Lexical,
            weight_key: "lexical",
            result_key: "lexical",
            default_weight: 0.6,
            description: "BM25 score relative to the best one. Default 0.6.",
        },
        About {
            signal: Signal::Structure,
            weight_key: "structure",
            result_key: "structure",
            default_weight: 0.15,
            description: "Structure: other anchors in the same paragraph, query words in the\n\
                section path, definitions, clause id named in the query.\nDefault 0.15.",
        },
        About {
            signal: Signal::Context,
            weight_key: "context",
            result_key: "context",
            default_weight: 0.25,
            description: "Context: how relevant the sentence just before or after it (same\n\
                document) is, on the fusion/dense/lexical scale. Answers often sit\n\
                one sentence away from the words that match the question.\nDefault 0.25.",
        },
        About {
            signal: Signal::Heading,
            weight_key: "heading",
            result_key: "heading",
            default_weight: 0.3,
            description: "Heading: cosine similarity of the query to the sentence's heading\n\
                path (document title and section headings, embedded at ingest).\nDefault 0.3.",
        },
        About {
            signal: Signal::Paragraph,
            weight_key: "paragraph",
            result_key: "paragraph",
            default_weight: 0.3,
            description: "Paragraph: cosine similarity of the query to the sentence's whole\n\
                paragraph (the normalised mean of its sentence vectors), for\n\
                questions a paragraph answers as a whole. Default 0.3.",
        },
        About {
            signal: Signal::Definition,
            weight_key: "definition",
            result_key: "definition",
            default_weight: 1.0,
            description: "Definition: for a sentence that defines terms, the best cosine\n\
                similarity of the query to one of its terms (embedded at ingest);\n\
                0 for other sentences. Carries questions about what a document\n\
                defines (\"the date when the contract is effective\" → `(the\n\
                \"Effective Date\")`). Default 1.0.",
        },
        About {
            signal: Signal::Provenance,
            weight_key: "provenance",
            result_key: "provenance",
            default_weight: 0.05,
            description: "Provenance: the sections `scoring.provenance` favours (annexes,\n\
                schedules and exhibits, by default) count more. Default 0.05.",
        },
        About {
            signal: Signal::Entity,
            weight_key: "entity",
            result_key: "entity",
            default_weight: 0.05,
            description: "Entity: dates, amounts and organisations asked for are present.\n\
                Default 0.05.",
        },
        About {
            signal: Signal::AnswerType,
            weight_key: "answerType",
            result_key: "answer_type",
            default_weight: 0.4,
            description: "Answer type: the query asks for a date (\"the date of the\n\
                contract\", \"when …\") and the sentence states one. Short questions\n\
                about a date share no word with the sentence that answers them\n\
                (\"This Agreement is entered into as of May 7, 2012\"). Default 0.4.",
        },
        About {
            signal: Signal::Document,
            weight_key: "document",
            result_key: "document",
            default_weight: 0.3,
            description: "Document: the query names the sentence's document, by the words of\n\
                its title or file name (\"… the hosting agreement?\" and\n\
                `webhelp-hosting-agreement.txt`), each word weighted by how few\n\
                documents it names. Default 0.3.",
        },
        About {
            signal: Signal::Rerank,
            weight_key: "rerank",
            result_key: "rerank",
            default_weight: 1.0,
            description: "Reranker score (`reranker`; read only when one is set), each\n\
                candidate's probability of answering the query as the reranker\n\
                judges it. Default 1.0, the dense similarity's weight.",
        },
    ];

    /// Every signal, in order.
    pub fn all() -> impl Iterator<Item = Signal> {
        Self::ABOUT.iter().map(|about| about.signal)
    }

    /// This signal's row of [`Signal::ABOUT`].
    pub fn about(self) -> &'static About {
        &Self::ABOUT[self as usize]
    }
}

/// One value per signal: a route's weights, or one result's signals.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PerSignal([f32; Signal::COUNT]);

impl PerSignal {
    /// Σ self × other, signal by signal: a composite score.
    pub fn weigh(&self, other: &PerSignal) -> f32 {
        self.0.iter().zip(&other.0).map(|(a, b)| a * b).sum()
    }

    /// Each signal with its value, in order.
    pub fn iter(&self) -> impl Iterator<Item = (Signal, f32)> + '_ {
        Signal::all().zip(self.0.iter().copied())
    }

    /// Writes the values as a map under each signal's `key`.
    fn serialize_keyed<S: Serializer>(
        &self,
        serializer: S,
        key: fn(&About) -> &'static str,
    ) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(Signal::COUNT))?;
        for (signal, value) in self.iter() {
            map.serialize_entry(key(signal.about()), &value)?;
        }
        map.end()
    }
}

impl Index<Signal> for PerSignal {
    type Output = f32;

    fn index(&self, signal: Signal) -> &f32 {
        &self.0[signal as usize]
    }
}

impl IndexMut<Signal> for PerSignal {
    fn index_mut(&mut self, signal: Signal) -> &mut f32 {
        &mut self.0[signal as usize]
    }
}

/// A route's `scoring.weights`: how much each signal counts in the
/// composite score. A manifest sets the weights it changes; the others
/// keep their defaults.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScoringWeights(PerSignal);

impl ScoringWeights {
    /// The weight of one signal.
    pub fn of(&self, signal: Signal) -> f32 {
        self.0[signal]
    }

    /// Sets one signal's weight.
    pub fn set(&mut self, signal: Signal, weight: f32) {
        self.0[signal] = weight;
    }

    /// The composite score of a sentence's signals.
    pub fn composite(&self, signals: &PerSignal) -> f32 {
        self.0.weigh(signals)
    }
}

impl Default for ScoringWeights {
    fn default() -> Self {
        let mut weights = PerSignal::default();
        for about in &Signal::ABOUT {
            weights[about.signal] = about.default_weight;
        }
        Self(weights)
    }
}

impl Serialize for ScoringWeights {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize_keyed(serializer, |about| about.weight_key)
    }
}

impl<'de> Deserialize<'de> for ScoringWeights {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Weights;
        impl<'de> Visitor<'de> for Weights {
            type Value = ScoringWeights;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of signal names to weights")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ScoringWeights, A::Error> {
                let mut weights = ScoringWeights::default();
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    match Signal::ABOUT.iter().find(|about| about.weight_key == key) {
                        Some(about) => weights.set(about.signal, map.next_value()?),
                        // Ignored, as any unknown field is: the manifest
                        // loader reports it by its path.
                        None => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(weights)
            }
        }
        deserializer.deserialize_map(Weights)
    }
}

impl JsonSchema for ScoringWeights {
    fn schema_name() -> Cow<'static, str> {
        "ScoringWeights".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let properties: serde_json::Map<String, serde_json::Value> = Signal::ABOUT
            .iter()
            .map(|about| {
                let property = serde_json::json!({
                    "type": "number",
                    "format": "float",
                    "default": about.default_weight,
                    "description": about.description,
                });
                (about.weight_key.to_string(), property)
            })
            .collect();
        schemars::json_schema!({
            "description": "Weights of the composite score's signals, each signal in [0, 1].",
            "type": "object",
            "properties": properties,
        })
    }
}

/// A result's signals, under their `result_key`s.
impl Serialize for PerSignal {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.serialize_keyed(serializer, |about| about.result_key)
    }
}

impl utoipa::PartialSchema for PerSignal {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
        let mut object = ObjectBuilder::new()
            .description(Some("The per-signal scores of one result, each in [0, 1]."));
        for about in &Signal::ABOUT {
            let value = ObjectBuilder::new()
                .schema_type(Type::Number)
                .format(Some(SchemaFormat::KnownFormat(KnownFormat::Float)))
                .description(Some(about.description));
            object = object
                .property(about.result_key, value)
                .required(about.result_key);
        }
        object.into()
    }
}

impl utoipa::ToSchema for PerSignal {
    fn name() -> Cow<'static, str> {
        "Signals".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_signal_order() {
        for (n, about) in Signal::ABOUT.iter().enumerate() {
            assert_eq!(about.signal as usize, n, "{:?}", about.signal);
        }
    }

    #[test]
    fn a_manifest_sets_the_weights_it_names_and_keeps_the_rest() {
        let weights: ScoringWeights =
            serde_yaml::from_str("answerType: 0.9\ndense: 0.5\n").expect("weights");
        assert_eq!(weights.of(Signal::AnswerType), 0.9);
        assert_eq!(weights.of(Signal::Dense), 0.5);
        assert_eq!(weights.of(Signal::Lexical), 0.6);
        let back: ScoringWeights =
            serde_yaml::from_str(&serde_yaml::to_string(&weights).expect("yaml")).expect("read");
        assert_eq!(back, weights);
    }

    #[test]
    fn the_configuration_reference_lists_every_weight_with_its_default() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/configuration.md");
        let reference = std::fs::read_to_string(path).expect("docs/configuration.md");
        for about in &Signal::ABOUT {
            let default = match about.default_weight.fract() == 0.0 {
                true => format!("{:.1}", about.default_weight),
                false => format!("{}", about.default_weight),
            };
            let row = format!("| `scoring.weights.{}` | {default} |", about.weight_key);
            assert!(
                reference.contains(&row),
                "docs/configuration.md lacks {row}"
            );
        }
    }

    #[test]
    fn a_weight_that_is_not_a_number_is_refused() {
        let refused = serde_yaml::from_str::<ScoringWeights>("dense: high\n");
        assert!(refused.is_err());
    }
}
