//! Fair shares of the long-running request budget (`--max-watches`): watches, followed logs,
//! exec and port-forward sessions each hold a task, buffers and a connection for as long as
//! they last, so their number is bounded. One bound for everyone let a single user who opened
//! them all lock every controller out; so the budget is shared out by who asks.
//!
//! - Requests of an exempt identity (a member of one of [`EXEMPT_GROUPS`], which is what the
//!   server's own kubeconfig, `bosun dev` and `bosun controller` against it act as) count
//!   against a budget of their own, so nothing other users do can refuse them.
//! - Everyone else shares the other budget of the same size by *flow*: a user by name, and all
//!   ServiceAccounts of a namespace together (anyone who may edit a namespace may mint
//!   ServiceAccounts there, which must not multiply their share). A flow may hold at most half
//!   of what the other flows leave free ([`share`]): one flow alone gets half the budget, a
//!   second half of the rest, and so on, so a newcomer always finds room until many flows
//!   are each holding a lot.
//!
//! The arithmetic is [`share`] and [`decide`], pure; [`Budget`] counts and hands out
//! [`Ticket`]s, which give their place back when dropped.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard},
};

use axum::{body::Body, response::Response};

use crate::{
    auth::user::{self, User},
    error::ApiError,
};

/// Groups whose members are exempt from fair shares: `system:masters`, as upstream's API
/// Priority and Fairness exempts it. The kubeconfig the server writes, `RunningServer::client`,
/// and `bosun dev`'s and `bosun controller`'s clients act as `kubernetes-admin` in it.
pub const EXEMPT_GROUPS: [&str; 1] = [user::MASTERS];

/// What long-running requests are, for messages.
const WHAT: &str = "long-running requests (watches, followed logs, exec, port-forward)";

/// Whom a request's long-running place is counted against.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Flow {
    /// A member of an exempt group: the exempt budget, no share.
    Exempt,
    /// A user, by name.
    User(String),
    /// The ServiceAccounts of a namespace, together.
    ServiceAccounts(String),
}

impl Flow {
    /// The flow of a user's requests.
    pub fn of(user: &User) -> Flow {
        if EXEMPT_GROUPS.iter().any(|group| user.in_group(group)) {
            return Flow::Exempt;
        }
        match user::split_service_account(&user.name) {
            Some((namespace, _)) => Flow::ServiceAccounts(namespace.to_string()),
            None => Flow::User(user.name.clone()),
        }
    }
}

impl Flow {
    /// "holds" or "hold", as the flow is one or several.
    fn holds(&self) -> &'static str {
        if matches!(self, Flow::User(_)) { "holds" } else { "hold" }
    }
}

impl std::fmt::Display for Flow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Flow::Exempt => write!(f, "members of {}", EXEMPT_GROUPS.join(", ")),
            Flow::User(name) => write!(f, "user {name:?}"),
            Flow::ServiceAccounts(namespace) => write!(f, "the ServiceAccounts of namespace {namespace:?}"),
        }
    }
}

/// The most one flow may hold when the others hold `others` of `budget`: half of what they
/// leave, but at least one while anything is left (so a newcomer is never refused while there
/// is room).
pub fn share(budget: usize, others: usize) -> usize {
    let left = budget.saturating_sub(others);
    if left == 0 { 0 } else { (left / 2).max(1) }
}

/// Why a request is refused a place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// The exempt budget is used up.
    #[error("{held} {WHAT} of {flow} are open, the most this server allows (--max-watches {budget})", flow = Flow::Exempt)]
    ExemptFull {
        /// How many the exempt hold.
        held: usize,
        /// The budget.
        budget: usize,
    },
    /// Every place of the shared budget is taken.
    #[error("all {budget} {WHAT} this server allows users outside {} are open (--max-watches)", EXEMPT_GROUPS.join(", "))]
    SharedFull {
        /// The budget.
        budget: usize,
    },
    /// The flow holds its fair share.
    #[error(
        "{flow} {} {held} of the {budget} {WHAT} this server allows users outside {} (--max-watches): one user may hold at most half of what the others leave free, {share} now",
        .flow.holds(),
        EXEMPT_GROUPS.join(", ")
    )]
    FairShare {
        /// Who.
        flow: Flow,
        /// How many it holds.
        held: usize,
        /// How many it may hold now.
        share: usize,
        /// The budget.
        budget: usize,
    },
}

/// What the counts were when a flow asked for one more place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Places of the flow's budget (exempt or shared) taken, by everyone.
    pub taken: usize,
    /// Places the flow itself holds (for the exempt, the same as `taken`).
    pub held: usize,
}

/// Whether `flow` may take one more place of `budget`.
pub fn decide(flow: &Flow, counts: Counts, budget: usize) -> Result<(), Refused> {
    let Counts { taken, held } = counts;
    if *flow == Flow::Exempt {
        return if taken < budget { Ok(()) } else { Err(Refused::ExemptFull { held: taken, budget }) };
    }
    if taken >= budget {
        return Err(Refused::SharedFull { budget });
    }
    let share = share(budget, taken - held);
    if held < share { Ok(()) } else { Err(Refused::FairShare { flow: flow.clone(), held, share, budget }) }
}

/// What is held now.
#[derive(Debug, Default)]
struct Held {
    exempt: usize,
    shared: usize,
    by_flow: HashMap<Flow, usize>,
}

/// The long-running request budget, shared out as the module says.
#[derive(Debug)]
pub struct Budget {
    budget: usize,
    held: Mutex<Held>,
}

/// A place in the [`Budget`], given back when dropped (when the watch, log, exec or
/// port-forward ends).
#[derive(Debug)]
#[must_use = "the place is given back when the ticket is dropped"]
pub struct Ticket {
    budget: Arc<Budget>,
    flow: Flow,
}

impl Budget {
    /// A budget of `budget` places for the exempt and as many for everyone else.
    pub fn new(budget: usize) -> Arc<Budget> {
        Arc::new(Budget { budget, held: Mutex::default() })
    }

    fn held(&self) -> MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A place for a request of `user`, or `429 TooManyRequests` (retry after a second) saying
    /// why not.
    pub fn admit(self: &Arc<Self>, user: &User) -> Result<Ticket, ApiError> {
        let flow = Flow::of(user);
        let mut held = self.held();
        let counts = match &flow {
            Flow::Exempt => Counts { taken: held.exempt, held: held.exempt },
            other => Counts { taken: held.shared, held: held.by_flow.get(other).copied().unwrap_or(0) },
        };
        decide(&flow, counts, self.budget).map_err(|refused| ApiError::too_many_requests(&refused.to_string()))?;
        match &flow {
            Flow::Exempt => held.exempt += 1,
            other => {
                held.shared += 1;
                *held.by_flow.entry(other.clone()).or_default() += 1;
            }
        }
        drop(held);
        Ok(Ticket { budget: self.clone(), flow })
    }

    /// Places held now, by everyone.
    pub fn open(&self) -> usize {
        let held = self.held();
        held.exempt + held.shared
    }
}

impl Ticket {
    /// The response with this ticket held until its body has been sent (or the client left).
    pub fn hold(self, response: Response) -> Response {
        response.map(|body| {
            Body::from_stream(futures::StreamExt::map(body.into_data_stream(), move |chunk| {
                // The ticket lives as long as the stream.
                let _ = &self;
                chunk
            }))
        })
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut held = self.budget.held();
        match &self.flow {
            Flow::Exempt => held.exempt -= 1,
            flow => {
                held.shared -= 1;
                // A flow that holds nothing is forgotten, so the map stays as small as what is open.
                if let Some(count) = held.by_flow.get_mut(flow) {
                    *count -= 1;
                    if *count == 0 {
                        held.by_flow.remove(flow);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flow_may_hold_half_of_what_the_others_leave_and_one_while_anything_is_left() {
        // (budget, held by others, share)
        let cases = [
            (10, 0, 5),
            (10, 5, 2),
            (10, 7, 1),
            (10, 8, 1),
            (10, 9, 1),
            (10, 10, 0),
            (10, 12, 0),
            (1, 0, 1),
            (2, 0, 1),
            (10_000, 0, 5_000),
            (10_000, 5_000, 2_500),
            (0, 0, 0),
        ];
        for (budget, others, expected) in cases {
            assert_eq!(share(budget, others), expected, "budget {budget}, others hold {others}");
        }
    }

    #[test]
    fn decisions_follow_the_share_the_total_and_the_exemption() {
        let alice = Flow::User("alice".into());
        let fair = |held, share| Err(Refused::FairShare { flow: alice.clone(), held, share, budget: 10 });
        // (flow, taken, held by the flow, decision) with a budget of 10
        let cases = [
            (alice.clone(), 0, 0, Ok(())),
            (alice.clone(), 4, 4, Ok(())),
            (alice.clone(), 5, 5, fair(5, 5)),
            (alice.clone(), 5, 0, Ok(())),
            (alice.clone(), 7, 2, fair(2, 2)),
            (alice.clone(), 9, 0, Ok(())),
            (alice.clone(), 10, 0, Err(Refused::SharedFull { budget: 10 })),
            (Flow::Exempt, 9, 9, Ok(())),
            (Flow::Exempt, 10, 10, Err(Refused::ExemptFull { held: 10, budget: 10 })),
        ];
        for (flow, taken, held, expected) in cases {
            assert_eq!(decide(&flow, Counts { taken, held }, 10), expected, "{flow}: {held} of {taken}");
        }
    }

    #[test]
    fn flows_are_users_namespaces_of_service_accounts_or_exempt() {
        let named =
            |name: &str, groups: &[&str]| User::authenticated(name, "", groups.iter().map(|g| g.to_string()).collect());
        let cases = [
            (User::admin(), Flow::Exempt),
            (named("ops", &["system:masters"]), Flow::Exempt),
            (named("alice", &["dev"]), Flow::User("alice".into())),
            (User::service_account("team", "a", ""), Flow::ServiceAccounts("team".into())),
            (User::service_account("team", "b", ""), Flow::ServiceAccounts("team".into())),
            (named("system:serviceaccount:bad", &[]), Flow::User("system:serviceaccount:bad".into())),
            (User::anonymous(), Flow::User("system:anonymous".into())),
        ];
        for (user, expected) in cases {
            assert_eq!(Flow::of(&user), expected, "{user:?}");
        }
    }

    #[test]
    fn tickets_give_their_place_back_and_flows_are_counted_apart() {
        let budget = Budget::new(4);
        let alice = User::authenticated("alice", "", vec![]);
        let bob = User::authenticated("bob", "", vec![]);
        let first = budget.admit(&alice).expect("alice's first");
        let second = budget.admit(&alice).expect("alice's second");
        let refused = budget.admit(&alice).expect_err("alice holds half");
        assert_eq!((refused.code, refused.reason), (429, "TooManyRequests"));
        assert!(refused.message.contains(r#"user "alice" holds 2 of the 4"#), "{}", refused.message);
        let bobs = budget.admit(&bob).expect("bob's first");
        assert!(budget.admit(&bob).is_err(), "bob may hold half of the 2 alice leaves");
        let admins: Vec<Ticket> =
            (0..4).map(|_| budget.admit(&User::admin()).expect("the admin's own budget")).collect();
        assert_eq!(budget.open(), 7);
        drop((first, second, bobs, admins));
        assert_eq!(budget.open(), 0);
        assert!(budget.held().by_flow.is_empty(), "flows holding nothing are forgotten");
    }
}
