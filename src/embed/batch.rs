//! Concurrent queries embedded together.
//!
//! A retrieval pod answers many requests at once, and each needs its query
//! embedded. One short query keeps the encoder busy for a few milliseconds
//! whatever else runs, so queries that arrive while the encoder is busy
//! wait for it, and the next free caller embeds all of them in one
//! [`Embedder::embed_queries`] call: one encoder pass over their packed
//! tokens instead of one pass each. A lone query goes straight through,
//! so a quiet service pays nothing for this.
//!
//! There is no thread of its own and no timer: the caller that finds the
//! encoder free leads the next batch, the others wait on a condition
//! variable until their vector is in.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard};

use super::{EmbedError, Embedder, Passage, SpanVectors};

/// Most queries embedded in one call: a batch's tokens share an encoder
/// pass, and past a few dozen short queries a bigger batch no longer
/// makes a pass cheaper per query, only the wait longer.
pub const MOST_QUERIES_PER_BATCH: usize = 32;

/// An [`Embedder`] whose [`Embedder::embed_query`] joins concurrent
/// callers into batches. Everything else passes through unchanged.
///
/// A query's vector may differ from the one it gets alone in the last
/// bits of its floats, since a batch's tokens go through the encoder's
/// matrix products together.
pub struct QueryBatcher {
    inner: Box<dyn Embedder>,
    most: usize,
    queue: Mutex<Queue>,
    settled: Condvar,
    /// Told the size of every batch once it is embedded (a metric).
    observer: Option<BatchObserver>,
}

/// What a [`QueryBatcher`] tells of each batch: how many queries it held.
pub type BatchObserver = Box<dyn Fn(usize) + Send + Sync>;

/// The queries waiting for the encoder and the vectors waiting for their
/// callers, each under the ticket its caller drew.
#[derive(Default)]
struct Queue {
    next_ticket: u64,
    waiting: Vec<(u64, String)>,
    finished: HashMap<u64, Result<Vec<f32>, EmbedError>>,
    /// A caller is embedding a batch now.
    busy: bool,
}

impl QueryBatcher {
    /// Batches `inner`'s queries, at most `most` (at least 1) at a time.
    pub fn new(inner: Box<dyn Embedder>, most: usize) -> Self {
        Self {
            inner,
            most: most.max(1),
            queue: Mutex::new(Queue::default()),
            settled: Condvar::new(),
            observer: None,
        }
    }

    /// Tells `observer` the size of every batch embedded from now on.
    pub fn observed_by(mut self, observer: BatchObserver) -> Self {
        self.observer = Some(observer);
        self
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        // A panic while the lock was held leaves the queue whole (every
        // change under it is a single push, drain or insert), so a
        // poisoned lock is still usable.
        self.queue
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Embeds the oldest waiting queries as one batch, the lock released
    /// meanwhile, and hands every caller its result.
    fn lead<'a>(&'a self, mut queue: MutexGuard<'a, Queue>) -> MutexGuard<'a, Queue> {
        queue.busy = true;
        let take = queue.waiting.len().min(self.most);
        let batch: Vec<(u64, String)> = queue.waiting.drain(..take).collect();
        drop(queue);

        let mut leading = Leading {
            batcher: self,
            tickets: batch.iter().map(|(ticket, _)| *ticket).collect(),
        };
        let texts: Vec<&str> = batch.iter().map(|(_, text)| text.as_str()).collect();
        let embedded = self.inner.embed_queries(&texts);
        let results: Vec<Result<Vec<f32>, EmbedError>> = match embedded {
            Ok(vectors) if vectors.len() == texts.len() => vectors.into_iter().map(Ok).collect(),
            Ok(vectors) => {
                let wrong = EmbedError::Config(format!(
                    "{} returned {} vectors for {} queries",
                    self.inner.model_id(),
                    vectors.len(),
                    texts.len()
                ));
                vec![Err(wrong); texts.len()]
            }
            Err(e) => vec![Err(e); texts.len()],
        };
        let tickets = std::mem::take(&mut leading.tickets);
        if let Some(observer) = &self.observer {
            observer(tickets.len());
        }
        let mut queue = self.lock();
        queue.finished.extend(tickets.into_iter().zip(results));
        queue.busy = false;
        drop(leading);
        self.settled.notify_all();
        queue
    }
}

/// The batch a caller is embedding. Dropped without its results (the
/// encoder panicked), it fails the batch's callers and frees the encoder,
/// so that nobody waits forever.
struct Leading<'a> {
    batcher: &'a QueryBatcher,
    tickets: Vec<u64>,
}

impl Drop for Leading<'_> {
    fn drop(&mut self) {
        if self.tickets.is_empty() {
            return;
        }
        let mut queue = self.batcher.lock();
        for ticket in self.tickets.drain(..) {
            let failed = EmbedError::Config("the query encoder failed mid-batch".to_string());
            queue.finished.insert(ticket, Err(failed));
        }
        queue.busy = false;
        drop(queue);
        self.batcher.settled.notify_all();
    }
}

impl Embedder for QueryBatcher {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }

    fn cache_id(&self) -> String {
        self.inner.cache_id()
    }

    fn query_cache_id(&self) -> String {
        self.inner.query_cache_id()
    }

    fn dimensions(&self) -> usize {
        self.inner.dimensions()
    }

    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.inner.embed_documents(texts)
    }

    fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let mut queue = self.lock();
        let ticket = queue.next_ticket;
        queue.next_ticket += 1;
        queue.waiting.push((ticket, text.to_string()));
        loop {
            if let Some(result) = queue.finished.remove(&ticket) {
                return result;
            }
            queue = if queue.busy {
                self.settled
                    .wait(queue)
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
            } else {
                self.lead(queue)
            };
        }
    }

    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.inner.embed_queries(texts)
    }

    fn embed_in_context(&self, passages: &[Passage]) -> Result<Vec<SpanVectors>, EmbedError> {
        self.inner.embed_in_context(passages)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Barrier};

    use super::*;

    /// A test double: each query's vector is its length and its first
    /// byte; records the size of every batch and can be made slow or made
    /// to fail.
    struct Recording {
        sizes: Arc<Mutex<Vec<usize>>>,
        delay: std::time::Duration,
        calls: AtomicUsize,
        fail_on: Option<&'static str>,
        panic_on: Option<&'static str>,
    }

    impl Recording {
        fn new(delay_ms: u64) -> Self {
            Self {
                sizes: Arc::default(),
                delay: std::time::Duration::from_millis(delay_ms),
                calls: AtomicUsize::new(0),
                fail_on: None,
                panic_on: None,
            }
        }
    }

    impl Embedder for Recording {
        fn model_id(&self) -> &str {
            "recording"
        }
        fn dimensions(&self) -> usize {
            2
        }
        fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
            self.embed_queries(texts)
        }
        fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
            Ok(self.embed_queries(&[text])?.remove(0))
        }
        fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(self.delay);
            self.sizes.lock().unwrap().push(texts.len());
            if let Some(bad) = self.panic_on
                && texts.contains(&bad)
            {
                panic!("encoder crashed");
            }
            if let Some(bad) = self.fail_on
                && texts.contains(&bad)
            {
                return Err(EmbedError::Tokenizer(format!("cannot read {bad}")));
            }
            Ok(texts
                .iter()
                .map(|t| vec![t.len() as f32, f32::from(t.as_bytes()[0])])
                .collect())
        }
    }

    #[test]
    fn a_lone_query_goes_straight_through() {
        let observed = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&observed);
        let batcher = QueryBatcher::new(Box::new(Recording::new(0)), 8)
            .observed_by(Box::new(move |n| seen.lock().unwrap().push(n)));
        assert_eq!(batcher.embed_query("abc").unwrap(), vec![3.0, 97.0]);
        assert_eq!(batcher.embed_query("hello").unwrap(), vec![5.0, 104.0]);
        assert_eq!(*observed.lock().unwrap(), vec![1, 1]);
    }

    #[test]
    fn concurrent_queries_share_batches_and_each_gets_its_own_vector() {
        let inner = Recording::new(30);
        let sizes = Arc::clone(&inner.sizes);
        let batcher = Arc::new(QueryBatcher::new(Box::new(inner), 4));
        let start = Arc::new(Barrier::new(10));
        let threads: Vec<_> = (0..10)
            .map(|i| {
                let batcher = Arc::clone(&batcher);
                let start = Arc::clone(&start);
                std::thread::spawn(move || {
                    let text = format!("{}{}", char::from(b'a' + i as u8), "x".repeat(i));
                    start.wait();
                    let vector = batcher.embed_query(&text).unwrap();
                    (text, vector)
                })
            })
            .collect();
        for thread in threads {
            let (text, vector) = thread.join().unwrap();
            assert_eq!(
                vector,
                vec![text.len() as f32, f32::from(text.as_bytes()[0])]
            );
        }
        let sizes = sizes.lock().unwrap().clone();
        assert_eq!(sizes.iter().sum::<usize>(), 10);
        assert!(sizes.iter().all(|&n| n <= 4), "batches {sizes:?}");
        // The first caller runs alone while the other nine gather behind
        // it, so fewer than ten encoder calls serve the ten queries.
        assert!(sizes.len() < 10, "batches {sizes:?}");
    }

    #[test]
    fn a_failed_batch_fails_its_callers_and_the_next_batch_runs() {
        let mut inner = Recording::new(0);
        inner.fail_on = Some("bad");
        let batcher = QueryBatcher::new(Box::new(inner), 4);
        let error = batcher.embed_query("bad").unwrap_err();
        assert!(error.to_string().contains("cannot read bad"), "{error}");
        assert_eq!(batcher.embed_query("good").unwrap(), vec![4.0, 103.0]);
    }

    #[test]
    fn a_panicking_encoder_fails_the_batch_without_stranding_anyone() {
        let mut inner = Recording::new(0);
        inner.panic_on = Some("boom");
        let batcher = Arc::new(QueryBatcher::new(Box::new(inner), 4));
        let crashed = {
            let batcher = Arc::clone(&batcher);
            std::thread::spawn(move || batcher.embed_query("boom")).join()
        };
        assert!(crashed.is_err(), "the leader's own call unwinds");
        assert_eq!(batcher.embed_query("fine").unwrap(), vec![4.0, 102.0]);
    }
}
