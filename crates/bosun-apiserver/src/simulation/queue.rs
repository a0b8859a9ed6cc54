//! The simulation's work queue: objects to look at, each at the earliest time asked for. An
//! object queued again before its time keeps the earlier time, so a burst of events costs one
//! look.

use std::collections::{BTreeSet, HashMap};

use tokio::time::Instant;

/// The kinds of object the simulation looks after.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// A Node: its status and its Lease.
    Node,
    /// A Pod: scheduling and the kubelet.
    Pod,
    /// A ReplicaSet's pods.
    ReplicaSet,
    /// A Deployment's ReplicaSets.
    Deployment,
    /// A StatefulSet's pods and claims.
    StatefulSet,
    /// A DaemonSet's pods.
    DaemonSet,
    /// A Job's pods.
    Job,
    /// A CronJob's Jobs.
    CronJob,
    /// A Service's Endpoints and EndpointSlices.
    Service,
    /// A PersistentVolumeClaim's volume.
    Claim,
}

/// One object to look at.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    /// Its kind.
    pub kind: Kind,
    /// Its namespace (empty for nodes).
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl Key {
    /// The key of an object.
    pub fn new(kind: Kind, namespace: &str, name: &str) -> Key {
        Key { kind, namespace: namespace.to_string(), name: name.to_string() }
    }
}

/// Keys with the time each is due.
#[derive(Debug, Default)]
pub struct Queue {
    at: HashMap<Key, Instant>,
    order: BTreeSet<(Instant, Key)>,
}

impl Queue {
    /// Asks for a look at `key` at `when`, unless one is already due sooner.
    pub fn push(&mut self, key: Key, when: Instant) {
        match self.at.get(&key) {
            Some(queued) if *queued <= when => {}
            Some(queued) => {
                self.order.remove(&(*queued, key.clone()));
                self.order.insert((when, key.clone()));
                self.at.insert(key, when);
            }
            None => {
                self.order.insert((when, key.clone()));
                self.at.insert(key, when);
            }
        }
    }

    /// When the next look is due.
    pub fn next_due(&self) -> Option<Instant> {
        self.order.first().map(|(when, _)| *when)
    }

    /// Removes and returns every key due by `now`, earliest first.
    pub fn take_due(&mut self, now: Instant) -> Vec<Key> {
        let mut due = Vec::new();
        while let Some((when, _)) = self.order.first() {
            if *when > now {
                break;
            }
            let (_, key) = self.order.pop_first().expect("checked above");
            self.at.remove(&key);
            due.push(key);
        }
        due
    }

    /// How many keys wait.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.at.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_key_queued_twice_is_due_once_at_the_earlier_time() {
        let start = Instant::now();
        let mut queue = Queue::default();
        let pod = Key::new(Kind::Pod, "default", "web");
        queue.push(pod.clone(), start + Duration::from_secs(5));
        queue.push(pod.clone(), start + Duration::from_secs(1));
        queue.push(pod.clone(), start + Duration::from_secs(9));
        queue.push(Key::new(Kind::Node, "", "n"), start + Duration::from_secs(3));
        assert_eq!(queue.len(), 2);
        assert_eq!(queue.next_due(), Some(start + Duration::from_secs(1)));
        assert_eq!(queue.take_due(start), Vec::<Key>::new());
        assert_eq!(queue.take_due(start + Duration::from_secs(2)), vec![pod]);
        assert_eq!(queue.take_due(start + Duration::from_secs(10)).len(), 1);
        assert_eq!(queue.next_due(), None);
    }
}
