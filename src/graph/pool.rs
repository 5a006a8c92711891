//! Connections to a graph store shared by the queries of one process.
//!
//! A retrieval process answers several queries at once (the service's
//! blocking pool, the evaluation's threads), and one connection runs one
//! statement at a time: behind a single lock, every query waited for the
//! one before it. The pool opens connections as queries need them, up to
//! a bound, and hands each query one of its own.

use std::ops::{Deref, DerefMut};
use std::sync::{Condvar, Mutex, MutexGuard};

use super::{GraphError, GraphStore, connect};
use crate::spec::GraphSpec;

/// Up to `size` connections to the store a [`GraphSpec`] names.
pub struct Pool {
    spec: GraphSpec,
    size: usize,
    state: Mutex<State>,
    /// Signalled when a connection comes back or a slot frees.
    returned: Condvar,
}

struct State {
    idle: Vec<Box<dyn GraphStore>>,
    /// Connections open or being opened, idle ones included.
    open: usize,
}

impl Pool {
    /// A pool holding `first`, already connected to the store `spec`
    /// names, that opens more as needed up to `size` (at least one).
    pub fn new(first: Box<dyn GraphStore>, spec: GraphSpec, size: usize) -> Self {
        Self {
            spec,
            size: size.max(1),
            state: Mutex::new(State {
                idle: vec![first],
                open: 1,
            }),
            returned: Condvar::new(),
        }
    }

    /// How many connections the pool may hold.
    pub fn size(&self) -> usize {
        self.size
    }

    /// How many connections are open now, lent or idle.
    pub fn open(&self) -> usize {
        self.lock().open
    }

    /// A connection of the caller's own until the guard drops: an idle
    /// one, a new one while fewer than `size` are open, or else the next
    /// one another caller gives back.
    pub fn get(&self) -> Result<Pooled<'_>, GraphError> {
        let mut state = self.lock();
        loop {
            if let Some(store) = state.idle.pop() {
                return Ok(self.lend(store));
            }
            if state.open < self.size {
                state.open += 1;
                // Connecting takes a round trip or more; other callers
                // may take and return connections meanwhile.
                drop(state);
                return match connect(&self.spec) {
                    Ok(Some(store)) => Ok(self.lend(store)),
                    Ok(None) => {
                        self.release_slot();
                        Err(GraphError::Config(
                            "graph.store is embedded: no connection to pool".into(),
                        ))
                    }
                    Err(e) => {
                        self.release_slot();
                        Err(e)
                    }
                };
            }
            state = self.returned.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn lend(&self, store: Box<dyn GraphStore>) -> Pooled<'_> {
        Pooled {
            pool: self,
            store: Some(store),
        }
    }

    fn release_slot(&self) {
        self.lock().open -= 1;
        self.returned.notify_one();
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is two plain fields, consistent between statements:
        // a panic elsewhere while holding the lock leaves it usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A connection lent by a [`Pool`]; it goes back when dropped.
pub struct Pooled<'a> {
    pool: &'a Pool,
    store: Option<Box<dyn GraphStore>>,
}

impl Deref for Pooled<'_> {
    type Target = dyn GraphStore;

    fn deref(&self) -> &Self::Target {
        self.store
            .as_deref()
            .expect("a lent connection is held until drop")
    }
}

impl DerefMut for Pooled<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        self.store
            .as_deref_mut()
            .expect("a lent connection is held until drop")
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        if let Some(store) = self.store.take() {
            self.pool.lock().idle.push(store);
            self.pool.returned.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;
    use crate::graph::{Rows, Statement, Value, anchors};

    /// A connection that answers nothing; the pool only moves it.
    struct Idle(u32);

    impl GraphStore for Idle {
        fn name(&self) -> &'static str {
            "idle"
        }
        fn prepare(&mut self, _: usize) -> Result<(), GraphError> {
            Ok(())
        }
        fn vector(&self, list: &str) -> String {
            list.to_string()
        }
        fn search(&self) -> anchors::Search {
            unimplemented!("not searched")
        }
        fn run(&mut self, _: &Statement<'_>) -> Result<Rows, GraphError> {
            Ok(vec![vec![self.0.into()]])
        }
    }

    fn pool(size: usize) -> Pool {
        // An embedded spec: the pool can reuse its first connection but
        // not open another.
        Pool::new(Box::new(Idle(7)), GraphSpec::default(), size)
    }

    #[test]
    fn a_returned_connection_is_lent_again() {
        let pool = pool(1);
        let first = pool.get().unwrap();
        assert_eq!(first.name(), "idle");
        drop(first);
        let mut again = pool.get().unwrap();
        let rows = again.run(&Statement::new("n", "RETURN 7")).unwrap();
        assert_eq!(rows, vec![vec![Value::Int(7)]]);
        assert_eq!(pool.open(), 1);
    }

    #[test]
    fn a_caller_waits_for_a_connection_when_all_are_lent() {
        let pool = pool(1);
        let held = pool.get().unwrap();
        let (took, taken) = mpsc::channel();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let _second = pool.get().unwrap();
                took.send(()).unwrap();
            });
            assert!(
                taken.recv_timeout(Duration::from_millis(100)).is_err(),
                "a second connection was lent while the only one was held"
            );
            drop(held);
            taken.recv_timeout(Duration::from_secs(10)).unwrap();
        });
        assert_eq!(pool.open(), 1);
    }

    #[test]
    fn a_connection_that_cannot_be_opened_frees_its_slot() {
        let pool = pool(2);
        let _held = pool.get().unwrap();
        let err = pool.get().err().expect("the embedded spec names no server");
        assert!(matches!(err, GraphError::Config(_)), "{err}");
        assert_eq!(pool.open(), 1);
    }
}
