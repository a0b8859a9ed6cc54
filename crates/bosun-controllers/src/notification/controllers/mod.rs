//! The controllers of the notification resources: [`alert`] delivers the events of Packages,
//! Operators and Canaries to the Alerts that select them; [`receiver`] serves the Receivers'
//! webhooks and asks for the runs they select.

pub(crate) mod alert;
pub(crate) mod receiver;
