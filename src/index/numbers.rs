//! The skeleton's global numbers, one type each.
//!
//! A version numbers its documents, sections, paragraphs and sentences
//! from 0 across the whole corpus ([`super::SkeletonStore`]); a sentence's
//! number is also its row in the vector file and its id in the BM25 and
//! HNSW indexes. As bare `u32`s a document number passed where a sentence
//! number belongs compiles and returns some other sentence; as these types
//! it does not. Each is written to disk as the plain number it wraps.

use std::fmt;
use std::ops::{Index, Sub};

use serde::{Deserialize, Serialize};

use super::store::{DocumentRecord, ParagraphRecord, SectionRecord, SentenceRecord};

macro_rules! number {
    ($(#[$doc:meta])* $name:ident, $record:ty) => {
        $(#[$doc])*
        #[derive(
            Clone,
            Copy,
            Debug,
            Default,
            PartialEq,
            Eq,
            Hash,
            PartialOrd,
            Ord,
            Serialize,
            Deserialize,
            utoipa::ToSchema,
        )]
        #[serde(transparent)]
        pub struct $name(pub u32);

        impl $name {
            /// Its place in the store's array.
            pub fn index(self) -> usize {
                self.0 as usize
            }

            /// The numbers `[start, end)`.
            pub fn range([start, end]: [Self; 2]) -> impl DoubleEndedIterator<Item = Self> {
                (start.0..end.0).map(Self)
            }

            /// How far apart two numbers are, either way round.
            pub fn distance(self, other: Self) -> u32 {
                self.0.abs_diff(other.0)
            }

            /// The number `by` after this one.
            pub fn after(self, by: u32) -> Self {
                Self(self.0 + by)
            }

            /// The number `by` before this one, which must exist.
            pub fn before(self, by: u32) -> Self {
                Self(self.0 - by)
            }
        }

        /// How many numbers lie from `start` up to this one.
        impl Sub for $name {
            type Output = u32;

            fn sub(self, start: Self) -> u32 {
                self.0 - start.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        impl Index<$name> for Vec<$record> {
            type Output = $record;

            fn index(&self, number: $name) -> &$record {
                &self[number.index()]
            }
        }
    };
}

number!(
    /// A document's number in its version.
    DocumentNumber,
    DocumentRecord
);
number!(
    /// A section's number in its version.
    SectionNumber,
    SectionRecord
);
number!(
    /// A paragraph's number in its version.
    ParagraphNumber,
    ParagraphRecord
);
number!(
    /// A sentence's number in its version: its row in the vector file and
    /// its id in the BM25 and HNSW indexes.
    SentenceNumber,
    SentenceRecord
);
