//! The run queue (pure): never two runs for one object at once; what arrives for an object
//! while its command runs is coalesced into one further run with the newest state; different
//! objects run in parallel up to a limit, in the order they became ready.

use std::collections::{HashMap, VecDeque};

use super::known::{CommandRun, EventType, Key};

#[derive(Debug, Default)]
struct Slot {
    running: bool,
    pending: Option<CommandRun>,
}

/// Runs waiting and running, per object.
#[derive(Debug)]
pub(crate) struct Queue {
    slots: HashMap<Key, Slot>,
    ready: VecDeque<Key>,
    running: usize,
    limit: usize,
}

/// Whether `new` is older than `old` (both numeric resourceVersions): a list answered before a
/// watch event must not replace it.
fn older(new: &str, old: &str) -> bool {
    matches!((new.parse::<u64>(), old.parse::<u64>()), (Ok(new), Ok(old)) if new < old)
}

/// One run standing for two: the newest state; a creation not yet run stays a creation.
fn coalesce(old: CommandRun, new: CommandRun) -> CommandRun {
    if older(&new.resource_version, &old.resource_version) {
        return old;
    }
    let event = match (old.event, new.event) {
        (EventType::Added, EventType::Updated | EventType::Sync) => EventType::Added,
        (_, event) => event,
    };
    CommandRun { event, ..new }
}

impl Queue {
    /// A queue running at most `limit` objects at once.
    pub(crate) fn new(limit: usize) -> Queue {
        Queue { slots: HashMap::new(), ready: VecDeque::new(), running: 0, limit: limit.max(1) }
    }

    /// Adds a run, merging it with one already waiting for the same object.
    pub(crate) fn push(&mut self, run: CommandRun) {
        let key = run.key.clone();
        let slot = self.slots.entry(key.clone()).or_default();
        let was_waiting = slot.pending.is_some();
        slot.pending = Some(match slot.pending.take() {
            Some(old) => coalesce(old, run),
            None => run,
        });
        if !slot.running && !was_waiting {
            self.ready.push_back(key);
        }
    }

    /// The next run to start, if the limit allows and one is ready.
    pub(crate) fn start(&mut self) -> Option<CommandRun> {
        if self.running >= self.limit {
            return None;
        }
        let key = self.ready.pop_front()?;
        let slot = self.slots.get_mut(&key).expect("ready keys have slots");
        let run = slot.pending.take().expect("ready slots have a run");
        slot.running = true;
        self.running += 1;
        Some(run)
    }

    /// A run finished; a run that waited meanwhile becomes ready.
    pub(crate) fn done(&mut self, key: &Key) {
        let Some(slot) = self.slots.get_mut(key) else { return };
        if slot.running {
            slot.running = false;
            self.running -= 1;
        }
        if slot.pending.is_some() {
            self.ready.push_back(key.clone());
        } else {
            self.slots.remove(key);
        }
    }

    /// Runs waiting (not running).
    pub(crate) fn waiting(&self) -> usize {
        self.slots.values().filter(|slot| slot.pending.is_some()).count()
    }

    /// Runs running.
    pub(crate) fn running(&self) -> usize {
        self.running
    }

    /// Whether nothing waits and nothing runs.
    pub(crate) fn is_idle(&self) -> bool {
        self.slots.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::known::ObjectSource;

    #[test]
    fn one_run_per_object_and_the_newest_state_next() {
        use crate::observe::{
            known::{CommandRun, EventType, Key, ObjectSource},
            queue::Queue,
        };
        let run = |version: &str| CommandRun {
            key: Key { namespace: "ns".into(), name: "a".into() },
            event: EventType::Updated,
            args: Ok(vec![version.into()]),
            resource_version: version.into(),
            object: ObjectSource::None,
            attempt: 0,
        };
        let mut queue = Queue::new(4);
        queue.push(run("1"));
        let first = queue.start().unwrap();
        queue.push(run("2"));
        queue.push(run("3"));
        assert!(queue.start().is_none(), "never two runs for one object at once");
        queue.done(&first.key);
        assert_eq!(queue.start().unwrap().resource_version, "3", "one further run, the newest state");
    }

    fn run(name: &str, event: EventType, version: &str) -> CommandRun {
        CommandRun {
            key: Key { namespace: "ns".into(), name: name.into() },
            event,
            args: Ok(vec![version.to_string()]),
            resource_version: version.into(),
            object: ObjectSource::None,
            attempt: 0,
        }
    }

    #[test]
    fn coalescing_keeps_the_newest_state_and_a_pending_creation() {
        let cases: [(EventType, &str, EventType, &str, EventType, &str); 6] = [
            (EventType::Added, "1", EventType::Updated, "2", EventType::Added, "2"),
            (EventType::Updated, "2", EventType::Updated, "3", EventType::Updated, "3"),
            (EventType::Updated, "5", EventType::Sync, "4", EventType::Updated, "5"),
            (EventType::Added, "1", EventType::Deleted, "2", EventType::Deleted, "2"),
            (EventType::Deleted, "2", EventType::Added, "3", EventType::Added, "3"),
            (EventType::Sync, "", EventType::Updated, "7", EventType::Updated, "7"),
        ];
        for (old_event, old_version, new_event, new_version, event, version) in cases {
            let merged = coalesce(run("a", old_event, old_version), run("a", new_event, new_version));
            assert_eq!(
                (merged.event, merged.resource_version.as_str()),
                (event, version),
                "{old_event:?} then {new_event:?}"
            );
        }
    }

    #[test]
    fn objects_run_in_parallel_up_to_the_limit_each_in_order() {
        let mut queue = Queue::new(2);
        for name in ["a", "b", "c"] {
            queue.push(run(name, EventType::Sync, "1"));
        }
        let started: Vec<String> = std::iter::from_fn(|| queue.start()).map(|r| r.key.name).collect();
        assert_eq!(started, ["a", "b"], "the limit holds");
        queue.push(run("a", EventType::Updated, "2"));
        assert_eq!(queue.waiting(), 2);
        queue.done(&run("a", EventType::Sync, "1").key);
        let next: Vec<String> = std::iter::from_fn(|| queue.start()).map(|r| r.key.name).collect();
        assert_eq!(next, ["c"], "c was ready before a's second run; b still holds a slot");
        queue.done(&run("b", EventType::Sync, "1").key);
        assert_eq!(queue.start().map(|r| (r.key.name, r.resource_version)), Some(("a".into(), "2".into())));
        queue.done(&run("a", EventType::Sync, "1").key);
        queue.done(&run("c", EventType::Sync, "1").key);
        assert!(queue.is_idle());
        assert_eq!(queue.running(), 0);
    }
}
