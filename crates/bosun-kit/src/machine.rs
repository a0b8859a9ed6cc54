//! A state machine for an application's lifecycle beyond the first rollout (deploy, upgrade,
//! backup, restore…): states, events, transitions with guards and actions. The current state
//! lives in the custom resource's status (write it with the status, read it back with
//! [`restore`]), so a phase survives a restart of the operator. Invalid transitions are
//! errors, never panics.
//!
//! ```
//! use bosun_kit::machine::Machine;
//!
//! let machine: Machine<&str, &str, u32> = Machine::new()
//!     .on("Pending", "applied", "Deploying")
//!     .guarded("Deploying", "available", "Running", |ready| *ready > 0)
//!     .on("Running", "image-changed", "Upgrading");
//! let mut ready = 0;
//! assert_eq!(machine.fire("Pending", "applied", &mut ready), Ok("Deploying"));
//! assert!(machine.fire("Deploying", "available", &mut ready).is_err(), "guard refuses");
//! ready = 3;
//! assert_eq!(machine.fire("Deploying", "available", &mut ready), Ok("Running"));
//! assert!(machine.fire("Pending", "image-changed", &mut ready).is_err(), "no such transition");
//! ```

use std::{fmt, str::FromStr};

/// One transition: from a state, on an event, to a state — if the guard allows; the action
/// runs when it is taken.
pub struct Transition<S, E, C> {
    from: S,
    event: E,
    to: S,
    guard: Option<fn(&C) -> bool>,
    action: Option<fn(&mut C)>,
}

/// The transitions of a lifecycle.
pub struct Machine<S, E, C> {
    transitions: Vec<Transition<S, E, C>>,
}

/// Why an event could not be taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MachineError {
    /// No transition leaves the state on the event.
    #[error("no transition from {from} on {event}")]
    NoTransition {
        /// The state.
        from: String,
        /// The event.
        event: String,
    },
    /// Transitions exist, but every guard refused.
    #[error("the transition from {from} on {event} is not allowed now")]
    Refused {
        /// The state.
        from: String,
        /// The event.
        event: String,
    },
    /// A persisted state is not one of the machine's.
    #[error("unknown state {0:?}")]
    UnknownState(String),
}

impl<S, E, C> Default for Machine<S, E, C> {
    fn default() -> Self {
        Machine { transitions: Vec::new() }
    }
}

impl<S, E, C> Machine<S, E, C>
where
    S: Copy + PartialEq + fmt::Display,
    E: PartialEq + fmt::Display,
{
    /// A machine without transitions.
    pub fn new() -> Self {
        Machine::default()
    }

    /// Adds a transition.
    pub fn on(self, from: S, event: E, to: S) -> Self {
        self.transition(Transition { from, event, to, guard: None, action: None })
    }

    /// Adds a transition taken only when `guard` allows it.
    pub fn guarded(self, from: S, event: E, to: S, guard: fn(&C) -> bool) -> Self {
        self.transition(Transition { from, event, to, guard: Some(guard), action: None })
    }

    /// Gives the transition added last an action, run when it is taken.
    pub fn then(mut self, action: fn(&mut C)) -> Self {
        if let Some(last) = self.transitions.last_mut() {
            last.action = Some(action);
        }
        self
    }

    fn transition(mut self, transition: Transition<S, E, C>) -> Self {
        self.transitions.push(transition);
        self
    }

    /// Takes `event` in state `current`: the first transition whose guard allows it runs its
    /// action and gives the new state.
    pub fn fire(&self, current: S, event: E, context: &mut C) -> Result<S, MachineError> {
        let mut candidates = self.transitions.iter().filter(|t| t.from == current && t.event == event).peekable();
        if candidates.peek().is_none() {
            return Err(MachineError::NoTransition { from: current.to_string(), event: event.to_string() });
        }
        let taken = candidates
            .find(|t| t.guard.is_none_or(|guard| guard(context)))
            .ok_or_else(|| MachineError::Refused { from: current.to_string(), event: event.to_string() })?;
        if let Some(action) = taken.action {
            action(context);
        }
        Ok(taken.to)
    }

    /// Whether `event` can be taken in `current` now.
    pub fn can(&self, current: S, event: E, context: &C) -> bool {
        self.transitions
            .iter()
            .any(|t| t.from == current && t.event == event && t.guard.is_none_or(|guard| guard(context)))
    }
}

/// The state persisted in a status field (`None`: not yet written → `initial`).
pub fn restore<S: FromStr>(persisted: Option<&str>, initial: S) -> Result<S, MachineError> {
    match persisted {
        None | Some("") => Ok(initial),
        Some(text) => text.parse().map_err(|_| MachineError::UnknownState(text.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Phase {
        Pending,
        Deploying,
        Running,
        Upgrading,
    }

    impl fmt::Display for Phase {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            fmt::Debug::fmt(self, f)
        }
    }

    impl FromStr for Phase {
        type Err = ();
        fn from_str(text: &str) -> Result<Phase, ()> {
            [Phase::Pending, Phase::Deploying, Phase::Running, Phase::Upgrading]
                .into_iter()
                .find(|phase| phase.to_string() == text)
                .ok_or(())
        }
    }

    struct World {
        available: bool,
        upgrades: u32,
    }

    fn machine() -> Machine<Phase, &'static str, World> {
        Machine::new()
            .on(Phase::Pending, "applied", Phase::Deploying)
            .guarded(Phase::Deploying, "checked", Phase::Running, |w: &World| w.available)
            .on(Phase::Running, "image-changed", Phase::Upgrading)
            .then(|w: &mut World| w.upgrades += 1)
            .guarded(Phase::Upgrading, "checked", Phase::Running, |w: &World| w.available)
    }

    #[test]
    fn transitions_guards_and_actions() {
        use Phase::*;
        let machine = machine();
        let mut world = World { available: false, upgrades: 0 };
        let refused = |from: &str, event: &str| MachineError::Refused { from: from.into(), event: event.into() };
        let none = |from: &str, event: &str| MachineError::NoTransition { from: from.into(), event: event.into() };
        let steps: [(Phase, &str, bool, Result<Phase, MachineError>); 7] = [
            (Pending, "applied", false, Ok(Deploying)),
            (Deploying, "checked", false, Err(refused("Deploying", "checked"))),
            (Deploying, "checked", true, Ok(Running)),
            (Running, "checked", true, Err(none("Running", "checked"))),
            (Running, "image-changed", false, Ok(Upgrading)),
            (Upgrading, "checked", true, Ok(Running)),
            (Pending, "image-changed", true, Err(none("Pending", "image-changed"))),
        ];
        for (from, event, available, expected) in steps {
            world.available = available;
            assert_eq!(machine.can(from, event, &world), expected.is_ok(), "{from} {event}");
            assert_eq!(machine.fire(from, event, &mut world), expected, "{from} {event}");
        }
        assert_eq!(world.upgrades, 1, "the action ran once, when its transition was taken");
    }

    #[test]
    fn states_are_restored_from_status() {
        assert_eq!(restore(None, Phase::Pending), Ok(Phase::Pending));
        assert_eq!(restore(Some(""), Phase::Pending), Ok(Phase::Pending));
        assert_eq!(restore(Some("Upgrading"), Phase::Pending), Ok(Phase::Upgrading));
        assert_eq!(
            restore::<Phase>(Some("Exploded"), Phase::Pending),
            Err(MachineError::UnknownState("Exploded".into()))
        );
    }
}
