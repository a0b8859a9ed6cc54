//! Notifications: events of bosun's controllers sent out (`Alert` and `Provider`), and webhooks
//! that trigger reconciles (`Receiver`); the resources are `bosun_api::notification`.
//!
//! The decisions are pure and live here: which Alerts an event matches and what a duplicate is
//! ([`event`]), what each provider is sent and how it is signed ([`provider`]), and how a
//! webhook's path is derived, its call verified and its Packages selected ([`receiver`]). The
//! controllers that act on them are [`crate::notification::controllers::alert`] and
//! [`crate::notification::controllers::receiver`]. Flux's notification-controller is the anchor.

pub(crate) mod controllers;
pub(crate) mod event;
pub(crate) mod provider;
pub(crate) mod receiver;
pub(crate) mod references;

/// Why a notification resource cannot work, or a delivery failed; each names the object.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NotificationError {
    /// The spec can never work as written.
    #[error("{object}: {message}")]
    Invalid {
        /// `Alert/ns/name`.
        object: String,
        /// What is wrong.
        message: String,
    },
    /// A Secret or Provider it needs is missing or lacks a key.
    #[error("{object}: {message}")]
    Missing {
        /// `Alert/ns/name`.
        object: String,
        /// What is missing.
        message: String,
    },
    /// It refers to an object in another namespace, and `--no-cross-namespace-refs` forbids it.
    #[error(
        "{object}: {field}: {namespace:?} is another namespace: cross-namespace references are not allowed (bosun controller --no-cross-namespace-refs)"
    )]
    CrossNamespace {
        /// `Alert/ns/name`.
        object: String,
        /// `spec.eventSources[0].namespace`.
        field: String,
        /// The namespace it names.
        namespace: String,
    },
    /// Sending to the provider failed.
    #[error("{object}: provider {provider} failed: {message}")]
    Delivery {
        /// `Alert/ns/name`.
        object: String,
        /// `Provider/ns/name (generic)`.
        provider: String,
        /// Why (the address is never included: it may be secret).
        message: String,
    },
}
