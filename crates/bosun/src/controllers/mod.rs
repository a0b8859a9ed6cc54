//! bosun's controllers, each a [`crate::kit`] reconciler for one of bosun's resources, hosted
//! together by `bosun controller`.

pub mod package;
