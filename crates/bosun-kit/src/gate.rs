//! How many reconciles run at once, in all and per key (see [`Controller::limit_per`]): objects
//! sharing a key — the cluster they deliver to, say — take at most a few places, and one
//! waiting for its key's turn takes none, so a slow or dead key never stalls the others.
//!
//! kube-runtime limits only the total, counting a reconcile that waits; so when a per-key
//! limit is set, kube-runtime runs unbounded and both limits are kept here.
//!
//! [`Controller::limit_per`]: crate::Controller::limit_per

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The key an object's reconciles are limited by; `None`: by the total only.
pub(crate) type KeyOf<K> = Arc<dyn Fn(&K) -> Option<String> + Send + Sync>;

/// The limits, shared by every reconcile of a controller.
pub(crate) struct Gate<K> {
    key_of: KeyOf<K>,
    per_key: usize,
    /// The controller's total (`None`: unlimited).
    all: Option<Arc<Semaphore>>,
    keys: Mutex<HashMap<String, Arc<Semaphore>>>,
}

/// A reconcile's places, given back when dropped.
pub(crate) struct Entered {
    _key: Option<OwnedSemaphorePermit>,
    _all: Option<OwnedSemaphorePermit>,
}

impl<K> Gate<K> {
    /// At most `per_key` reconciles of one key at once (at least 1) and `all` in total (0: no
    /// total).
    pub(crate) fn new(key_of: KeyOf<K>, per_key: u16, all: u16) -> Gate<K> {
        Gate {
            key_of,
            per_key: usize::from(per_key.max(1)),
            all: (all > 0).then(|| Arc::new(Semaphore::new(usize::from(all)))),
            keys: Mutex::default(),
        }
    }

    /// Waits for the object's key's turn, and only then for a place in the total.
    pub(crate) async fn enter(&self, object: &K) -> Entered {
        let key = match (self.key_of)(object) {
            None => None,
            Some(key) => {
                let semaphore = {
                    let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
                    keys.entry(key).or_insert_with(|| Arc::new(Semaphore::new(self.per_key))).clone()
                };
                // The semaphores are never closed: acquiring fails only if they were.
                semaphore.acquire_owned().await.ok()
            }
        };
        let all = match &self.all {
            None => None,
            Some(all) => all.clone().acquire_owned().await.ok(),
        };
        Entered { _key: key, _all: all }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn gate(per_key: u16, all: u16) -> Arc<Gate<(String, u32)>> {
        Arc::new(Gate::new(Arc::new(|object: &(String, u32)| Some(object.0.clone())), per_key, all))
    }

    /// Whether entering for `object` completes at once.
    async fn enters_now(gate: &Gate<(String, u32)>, object: (&str, u32)) -> Option<Entered> {
        tokio::time::timeout(Duration::from_millis(50), gate.enter(&(object.0.to_string(), object.1))).await.ok()
    }

    #[tokio::test]
    async fn a_key_at_its_limit_waits_without_taking_a_place_of_the_total() {
        let gate = gate(2, 3);
        let a1 = enters_now(&gate, ("a", 1)).await.expect("a's first place");
        let _a2 = enters_now(&gate, ("a", 2)).await.expect("a's second place");
        // a is full: its third object waits, in the background, for a's turn.
        let waiting = tokio::spawn({
            let gate = gate.clone();
            async move { gate.enter(&("a".to_string(), 3)).await }
        });
        tokio::task::yield_now().await;
        // The total has 3 places; a holds 2 and its waiting object none: b gets the third.
        let b1 = enters_now(&gate, ("b", 1)).await.expect("b is not held up by a");
        assert!(enters_now(&gate, ("b", 2)).await.is_none(), "the total is full");
        assert!(!waiting.is_finished());
        drop(a1);
        drop(b1);
        tokio::time::timeout(Duration::from_secs(5), waiting).await.expect("a's turn came").expect("task");
    }

    #[tokio::test]
    async fn objects_without_a_key_are_limited_by_the_total_only() {
        let gate: Gate<u32> = Gate::new(Arc::new(|_: &u32| None), 1, 2);
        let first = gate.enter(&1).await;
        let _second = tokio::time::timeout(Duration::from_millis(50), gate.enter(&2)).await.expect("a second place");
        assert!(tokio::time::timeout(Duration::from_millis(50), gate.enter(&3)).await.is_err(), "the total is 2");
        drop(first);
        assert!(tokio::time::timeout(Duration::from_secs(5), gate.enter(&3)).await.is_ok());
    }

    #[tokio::test]
    async fn without_a_total_only_the_keys_limit() {
        let gate = gate(1, 0);
        let _a = enters_now(&gate, ("a", 1)).await.expect("a");
        let _b = enters_now(&gate, ("b", 1)).await.expect("b");
        let _c = enters_now(&gate, ("c", 1)).await.expect("c");
        assert!(enters_now(&gate, ("a", 2)).await.is_none(), "a's one place is taken");
    }
}
