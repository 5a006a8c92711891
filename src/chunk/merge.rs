//! The merge policy for tiny chunks, as a pure function over anything
//! [`Mergeable`].
//!
//! A text chunk under `mergeBelowTokens` is merged, when the result stays
//! within `maxTokens`, with:
//!
//! 1. its previous or next chunk — a neighbour with the same heading path
//!    first, then the previous, then the next;
//! 2. else the nearest chunk with the same heading path across table
//!    chunks in between (tables themselves never merge);
//! 3. else the chunk anywhere in the document whose word-set Jaccard
//!    similarity is highest and above `mergeMinJaccard` (ties: the
//!    earliest).
//!
//! The merged chunk takes the earlier chunk's place and keeps reading order
//! inside (earlier content first), so chunks stay in the reading order of
//! their first sentence. A merged chunk that is still small is considered
//! again.

/// A chunk as the merge policy sees it.
pub(super) trait Mergeable: Sized {
    fn tokens(&self) -> u32;
    /// Whether the chunk may merge at all (table chunks may not).
    fn can_merge(&self) -> bool;
    fn heading_path(&self) -> &[String];
    /// Tokens of `self` followed by `later`, once merged.
    fn merged_tokens(&self, later: &Self) -> u32;
    /// `self` followed by `later`.
    fn merge(self, later: Self) -> Self;
    /// Hashes of the chunk's distinct lower-cased words, sorted.
    fn word_set(&self) -> Vec<u64>;
}

/// The limits of the policy, from the chunking spec.
#[derive(Clone, Copy, Debug)]
pub(super) struct MergeRules {
    /// Chunks under this many tokens merge.
    pub below: u32,
    /// No merge may produce more tokens than this.
    pub max: u32,
    /// Jaccard similarity a non-adjacent partner must exceed.
    pub min_jaccard: f64,
}

/// Applies the merge policy; see the module docs.
pub(super) fn merge_small<T: Mergeable>(items: Vec<T>, rules: &MergeRules) -> Vec<T> {
    let n = items.len();
    let mut list = Linked {
        slots: items.into_iter().map(Some).collect(),
        prev: (0..n).map(|i| i.checked_sub(1)).collect(),
        next: (0..n).map(|i| (i + 1 < n).then_some(i + 1)).collect(),
        words: vec![None; n],
    };
    let mut cursor = (n > 0).then_some(0);
    while let Some(i) = cursor {
        let small = list.slots[i]
            .as_ref()
            .is_some_and(|item| item.can_merge() && item.tokens() < rules.below);
        if !small {
            cursor = list.next[i];
            continue;
        }
        match list.partner(i, rules) {
            Some(j) => cursor = Some(list.merge(i.min(j), i.max(j))),
            None => cursor = list.next[i],
        }
    }
    list.slots.into_iter().flatten().collect()
}

/// The chunks as a doubly linked list over their original slots, so that
/// merging is O(1) and slot order stays reading order.
struct Linked<T> {
    slots: Vec<Option<T>>,
    prev: Vec<Option<usize>>,
    next: Vec<Option<usize>>,
    /// Word sets, computed on demand for Jaccard and dropped on merge.
    words: Vec<Option<Vec<u64>>>,
}

impl<T: Mergeable> Linked<T> {
    fn item(&self, i: usize) -> Option<&T> {
        self.slots.get(i).and_then(Option::as_ref)
    }

    /// Whether `i` and `j` may merge within the limit.
    fn fits(&self, i: usize, j: usize, rules: &MergeRules) -> bool {
        let (a, b) = (i.min(j), i.max(j));
        match (self.item(a), self.item(b)) {
            (Some(a), Some(b)) => a.can_merge() && b.can_merge() && a.merged_tokens(b) <= rules.max,
            _ => false,
        }
    }

    fn same_path(&self, i: usize, j: usize) -> bool {
        match (self.item(i), self.item(j)) {
            (Some(a), Some(b)) => a.heading_path() == b.heading_path(),
            _ => false,
        }
    }

    fn partner(&mut self, i: usize, rules: &MergeRules) -> Option<usize> {
        let fitting = |j: Option<usize>| j.filter(|&j| self.fits(i, j, rules));
        let (prev, next) = (fitting(self.prev[i]), fitting(self.next[i]));
        let neighbour = [prev, next]
            .into_iter()
            .flatten()
            .find(|&j| self.same_path(i, j))
            .or(prev)
            .or(next);
        if neighbour.is_some() {
            return neighbour;
        }
        let across_tables = |links: &[Option<usize>]| {
            let mut j = links[i];
            while let Some(k) = j {
                if self.item(k).is_some_and(Mergeable::can_merge) {
                    break;
                }
                j = links[k];
            }
            j.filter(|&k| self.same_path(i, k) && self.fits(i, k, rules))
        };
        if let Some(j) = across_tables(&self.prev).or_else(|| across_tables(&self.next)) {
            return Some(j);
        }
        self.most_similar(i, rules)
    }

    fn most_similar(&mut self, i: usize, rules: &MergeRules) -> Option<usize> {
        let candidates: Vec<usize> = (0..self.slots.len())
            .filter(|&j| j != i && self.fits(i, j, rules))
            .collect();
        if candidates.is_empty() {
            return None;
        }
        self.ensure_words(i);
        let mut best: Option<(usize, f64)> = None;
        for j in candidates {
            self.ensure_words(j);
            let (Some(Some(a)), Some(Some(b))) = (self.words.get(i), self.words.get(j)) else {
                continue;
            };
            let similarity = jaccard(a, b);
            if similarity > rules.min_jaccard && best.is_none_or(|(_, s)| similarity > s) {
                best = Some((j, similarity));
            }
        }
        best.map(|(j, _)| j)
    }

    fn ensure_words(&mut self, i: usize) {
        if self.words.get(i).is_some_and(Option::is_none) {
            let words = self.item(i).map(Mergeable::word_set);
            self.words[i] = words;
        }
    }

    /// Merges slot `b` into the earlier slot `a`; returns `a`.
    fn merge(&mut self, a: usize, b: usize) -> usize {
        if let (Some(earlier), Some(later)) = (self.slots[a].take(), self.slots[b].take()) {
            self.slots[a] = Some(earlier.merge(later));
        }
        self.words[a] = None;
        self.words[b] = None;
        let (p, n) = (self.prev[b], self.next[b]);
        if let Some(p) = p {
            self.next[p] = n;
        }
        if let Some(n) = n {
            self.prev[n] = p;
        }
        a
    }
}

/// |A ∩ B| / |A ∪ B| of two sorted, deduplicated sets.
pub(super) fn jaccard(a: &[u64], b: &[u64]) -> f64 {
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while let (Some(x), Some(y)) = (a.get(i), b.get(j)) {
        match x.cmp(y) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    let union = a.len() + b.len() - common;
    if union == 0 {
        0.0
    } else {
        common as f64 / union as f64
    }
}

/// Sorted, deduplicated FNV-1a hashes of the lower-cased alphanumeric words
/// of `texts`.
pub(super) fn word_hashes<'t>(texts: impl Iterator<Item = &'t str>) -> Vec<u64> {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0100_0000_01b3;
    let mut out = Vec::new();
    for text in texts {
        for word in text.split(|c: char| !c.is_alphanumeric()) {
            if word.is_empty() {
                continue;
            }
            let mut hash = OFFSET;
            for c in word.chars().flat_map(char::to_lowercase) {
                for byte in (c as u32).to_le_bytes() {
                    hash ^= u64::from(byte);
                    hash = hash.wrapping_mul(PRIME);
                }
            }
            out.push(hash);
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chunk reduced to what the policy looks at.
    #[derive(Clone, Debug, PartialEq)]
    struct Toy {
        ids: Vec<u32>,
        words: Vec<&'static str>,
        path: Vec<String>,
        table: bool,
    }

    fn toy(id: u32, path: &str, text: &'static str) -> Toy {
        Toy {
            ids: vec![id],
            words: text.split_whitespace().collect(),
            path: path
                .split('/')
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect(),
            table: false,
        }
    }

    fn table(id: u32, path: &str, text: &'static str) -> Toy {
        Toy {
            table: true,
            ..toy(id, path, text)
        }
    }

    impl Mergeable for Toy {
        fn tokens(&self) -> u32 {
            self.words.len() as u32
        }
        fn can_merge(&self) -> bool {
            !self.table
        }
        fn heading_path(&self) -> &[String] {
            &self.path
        }
        fn merged_tokens(&self, later: &Self) -> u32 {
            self.tokens() + later.tokens()
        }
        fn merge(mut self, later: Self) -> Self {
            self.ids.extend(later.ids);
            self.words.extend(later.words);
            let k = self
                .path
                .iter()
                .zip(&later.path)
                .take_while(|(a, b)| a == b)
                .count();
            self.path.truncate(k);
            self
        }
        fn word_set(&self) -> Vec<u64> {
            word_hashes(self.words.iter().copied())
        }
    }

    const RULES: MergeRules = MergeRules {
        below: 3,
        max: 6,
        min_jaccard: 0.6,
    };

    fn ids(items: &[Toy]) -> Vec<Vec<u32>> {
        items.iter().map(|t| t.ids.clone()).collect()
    }

    #[test]
    fn prefers_the_neighbour_with_the_same_heading_path() {
        let items = vec![toy(0, "A", "a b c"), toy(1, "B", "x"), toy(2, "B", "y z w")];
        assert_eq!(ids(&merge_small(items, &RULES)), [vec![0], vec![1, 2]]);
    }

    #[test]
    fn prefers_the_previous_neighbour_otherwise() {
        let items = vec![toy(0, "A", "a b c"), toy(1, "B", "x"), toy(2, "C", "y z w")];
        let merged = merge_small(items, &RULES);
        assert_eq!(ids(&merged), [vec![0, 1], vec![2]]);
        // Different heading paths merge under their common prefix.
        assert!(merged[0].path.is_empty());
    }

    #[test]
    fn takes_the_next_when_the_previous_is_full() {
        let items = vec![
            toy(0, "A", "a b c d e f"),
            toy(1, "B", "x"),
            toy(2, "C", "y z w"),
        ];
        assert_eq!(ids(&merge_small(items, &RULES)), [vec![0], vec![1, 2]]);
    }

    #[test]
    fn never_exceeds_the_limit_and_never_merges_tables() {
        let items = vec![
            toy(0, "A", "a b c d e f"),
            toy(1, "A", "x"),
            table(2, "A", "t"),
        ];
        let merged = merge_small(items.clone(), &RULES);
        assert_eq!(merged, items);
    }

    #[test]
    fn reaches_the_same_heading_path_across_tables() {
        let items = vec![
            toy(0, "A", "a b c d e f"),
            toy(1, "A", "x"),
            table(2, "A", "t u v w"),
            toy(3, "A", "y z"),
        ];
        assert_eq!(
            ids(&merge_small(items, &RULES)),
            [vec![0], vec![1, 3], vec![2]]
        );
    }

    #[test]
    fn falls_back_to_the_most_similar_chunk() {
        let items = vec![
            toy(0, "A", "fee schedule"),
            toy(1, "B", "p q r s t u"),
            table(2, "B", "t"),
            toy(3, "C", "a b c d e f"),
            toy(4, "D", "late fee schedule"),
            toy(5, "E", "g h i j k l"),
        ];
        // 0 fits neither neighbour; 4 shares 2 of its 3 words (0.67 > 0.6).
        let merged = merge_small(items, &RULES);
        assert_eq!(
            ids(&merged),
            [vec![0, 4], vec![1], vec![2], vec![3], vec![5]]
        );
    }

    #[test]
    fn dissimilar_small_chunks_stay() {
        let items = vec![
            toy(0, "A", "fee schedule"),
            toy(1, "B", "p q r s t u"),
            toy(2, "D", "unrelated words here"),
            toy(3, "E", "g h i j k l"),
        ];
        assert_eq!(merge_small(items.clone(), &RULES), items);
    }

    #[test]
    fn merged_small_chunks_are_reconsidered() {
        let items = vec![toy(0, "A", "a"), toy(1, "A", "b"), toy(2, "A", "c")];
        assert_eq!(ids(&merge_small(items, &RULES)), [vec![0, 1, 2]]);
    }

    #[test]
    fn jaccard_of_sets() {
        assert_eq!(jaccard(&[1, 2, 3], &[2, 3, 4]), 0.5);
        assert_eq!(jaccard(&[], &[]), 0.0);
        let a = word_hashes(["Fee, fee SCHEDULE"].into_iter());
        let b = word_hashes(["fee schedule"].into_iter());
        assert_eq!(a, b);
    }
}
